"""A repository's config file that is not valid YAML is a finding of its own (CFG006), not a
stop of the whole gate: the other files are judged. An error where a launch line of the
repository names it, a warning where none does; the same file given to ``check --config`` stays
exit 2 with the file and line. Issue 35 (xsc1234/RLKD: one invalid recipe stopped the hook)."""

from __future__ import annotations

import json

from tests.conftest import run_cli

GOOD = "use_vllm: true\nnum_generations: 8\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 1\n"
BROKEN = "use_vllm: true\nnum_generations: 8\nhub_strategy: every_save\n6\nlearning_rate: 5.0e-05\n"
ZERO3 = "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"


def _repo(tmp_path, launched: bool):
    files = {
        "recipes/good/config.yaml": GOOD,
        "recipes/zero/config.yaml": BROKEN,
        "recipes/zero3.yaml": ZERO3,
        "train.py": "from trl import GRPOTrainer, GRPOConfig\n",
    }
    if launched:
        files["run_zero.sh"] = (
            "accelerate launch --config_file recipes/zero3.yaml --num_processes 8 train.py "
            "--config recipes/zero/config.yaml\n"
        )
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _hook(repo):
    out = run_cli(
        "hook",
        "--format",
        "json",
        "--assume",
        "trl==0.18.0",
        "recipes/good/config.yaml",
        "recipes/zero/config.yaml",
        "recipes/zero3.yaml",
        cwd=repo,
    )
    return out.returncode, json.loads(out.stdout)["files"] if out.stdout else out.stderr


def test_a_launched_recipe_that_is_not_yaml_is_an_error_and_the_others_are_still_judged(tmp_path):
    rc, files = _hook(_repo(tmp_path, launched=True))
    assert rc == 1, files
    broken = next(f for f in files if f["file"] == "recipes/zero/config.yaml")
    (finding,) = broken["report"]["findings"]
    assert finding["rule"] == "CFG006" and finding["severity"] == "error"
    assert "invalid YAML at line 5" in finding["message"] and "run_zero.sh:1" in finding["message"]
    assert finding["evidence"]["file"] == "recipes/zero/config.yaml" and finding["evidence"]["line"] == 5
    assert any(f["file"].startswith("recipes/good/config.yaml") for f in files)


def test_a_broken_recipe_no_launch_line_names_is_a_warning(tmp_path):
    rc, files = _hook(_repo(tmp_path, launched=False))
    assert rc == 0, files
    broken = next(f for f in files if f["file"] == "recipes/zero/config.yaml")
    assert [(f["rule"], f["severity"]) for f in broken["report"]["findings"]] == [("CFG006", "warning")]


def test_valid_recipes_get_no_cfg006_and_a_broken_file_given_to_check_is_still_exit_2(tmp_path):
    repo = _repo(tmp_path, launched=True)
    (repo / "recipes/zero/config.yaml").write_text(GOOD)
    rc, files = _hook(repo)
    assert not [f for item in files for f in item["report"]["findings"] if f["rule"] == "CFG006"]
    (repo / "recipes/zero/config.yaml").write_text(BROKEN)
    out = run_cli("check", "--config", "recipes/zero/config.yaml", cwd=repo)
    assert out.returncode == 2 and "recipes/zero/config.yaml" in out.stderr and "line 5" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_results_file_with_nan_and_a_utf16_requirements_file_do_not_stop_the_gate(tmp_path):
    """A repository's results JSON as Python writes it (NaN) is a file of another kind, and a
    requirements file `pip freeze > file` wrote in PowerShell is UTF-16 with its byte-order mark,
    which pip reads: neither is a reason to stop the whole gate with exit 2 (TiandaSun/KG_GRPO,
    alexchilton/CAS_NLP_MODULE4_GRPO on the fourth held-out set, after its measurement)."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "scores.json").write_text('{"pearson": NaN, "n": 3}\n')
    (tmp_path / "requirements.txt").write_bytes("trl==0.17.0\nvllm==0.8.5\n".encode("utf-16"))
    (tmp_path / "config.yaml").write_text(GOOD)
    out = run_cli(
        "hook", "--format", "json", "results/scores.json", "requirements.txt", "config.yaml", cwd=tmp_path
    )
    assert out.returncode in (0, 1), out.stderr
    said = json.dumps(json.loads(out.stdout))
    assert "0.17.0" in said  # the UTF-16 requirements were read: TRL 0.17.0 is the stack judged
    assert "NaN" not in out.stderr


def test_a_byte_order_mark_names_the_encoding_of_a_users_file(tmp_path):
    from envdoctor.errors import read_input_text

    for encoding in ("utf-16", "utf-32", "utf-8-sig"):
        path = tmp_path / f"r-{encoding}.txt"
        path.write_bytes("trl==0.17.0\n".encode(encoding))
        assert read_input_text(path, "r", 1 << 20) == "trl==0.17.0\n"
