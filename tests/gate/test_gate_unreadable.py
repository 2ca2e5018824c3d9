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
