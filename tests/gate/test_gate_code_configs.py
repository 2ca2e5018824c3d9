"""The hook judges the GRPOConfig a repository's scripts build in code (``GRPOConfig(k=v)``,
``GRPOConfig(**mapping)``) with the rules a YAML config gets, each finding at the call's file and
line; tests, keys TRL has and a subproject's pins stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

TRAIN = """from trl import GRPOConfig, GRPOTrainer

args = GRPOConfig(
    output_dir="out",
    {keys}
)
"""


def _repo(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


def _hook(repo: Path, *args: str) -> tuple[int, list[dict]]:
    out = run_cli("hook", "--format", "json", *args, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, [
        {**f, "target": item["file"], "script": item.get("script")}
        for item in json.loads(out.stdout)["files"]
        for f in item["report"]["findings"]
    ]


def test_a_key_trl_removed_in_a_scripts_call_is_found_at_the_call(tmp_path):
    _repo(tmp_path, {"train.py": TRAIN.format(keys='vllm_device="cuda:1",\n    num_generations=4,')})
    rc, found = _hook(tmp_path, "--assume", "trl==0.19.0")
    [hit] = [f for f in found if f["rule"] == "CFG001"]
    assert hit["script"] == "train.py" and hit["evidence"]["key"] == "vllm_device"
    assert (hit["evidence"]["file"], hit["evidence"]["line"]) == ("train.py", 3)
    assert "TypeError" in hit["message"] and hit["severity"] == "error" and rc == 1


def test_a_spread_mapping_is_judged_like_keywords(tmp_path):
    text = (
        "from trl import GRPOConfig\n"
        'cfg = {"max_prompt_length": 512, "num_generations": 4}\n'
        "GRPOConfig(**cfg)\n"
    )
    _repo(tmp_path, {"grpo.py": text})
    rc, found = _hook(tmp_path, "--assume", "trl==0.28.0")
    assert [(f["rule"], f["evidence"]["key"]) for f in found if f["rule"] == "CFG001"] == [
        ("CFG001", "max_prompt_length")
    ]


def test_a_key_the_scripts_dataclass_declares_is_still_judged_when_passed_to_grpoconfig(tmp_path):
    text = (
        "from dataclasses import dataclass\nfrom trl import GRPOConfig, TrlParser\n\n@dataclass\n"
        "class MyArgs:\n    max_prompt_length: int = 512\n\n"
        "args = TrlParser((MyArgs,)).parse_args_and_config()[0]\n"
        "cfg = GRPOConfig(max_prompt_length=args.max_prompt_length, num_generations=4)\n"
    )
    _repo(tmp_path, {"train.py": text})
    rc, found = _hook(tmp_path, "--assume", "trl==0.28.0")
    assert ("CFG001", "max_prompt_length") in {(f["rule"], f["evidence"].get("key")) for f in found}


def test_the_batch_is_judged_under_the_repositorys_launch_line_only(tmp_path):
    keys = "per_device_train_batch_size=1,\n    gradient_accumulation_steps=1,\n    num_generations=4,"
    _repo(tmp_path, {"train.py": TRAIN.format(keys=keys)})
    rc, found = _hook(tmp_path, "--assume", "trl==0.19.0")
    assert "CFG002" not in {f["rule"] for f in found}  # no process count known: not judged
    (tmp_path / "run.sh").write_text("accelerate launch --num_processes 3 train.py\n")
    rc, found = _hook(tmp_path, "--assume", "trl==0.19.0")
    assert "CFG002" in {f["rule"] for f in found}


def test_tests_and_healthy_calls_stay_quiet(tmp_path):
    _repo(
        tmp_path,
        {
            "tests/test_config.py": TRAIN.format(keys='vllm_device="cuda:1",'),
            "test_grpo.py": TRAIN.format(keys='vllm_device="cuda:1",'),
            "train.py": TRAIN.format(
                keys="num_generations=4,\n    use_vllm=True,\n    vllm_mode='colocate',"
            ),
        },
    )
    rc, found = _hook(tmp_path, "--assume", "trl==1.16.0")
    assert rc == 0
    assert not [f for f in found if f["severity"] in ("error", "warning") and f["rule"].startswith("CFG")], (
        found
    )
    assert {f["script"] for f in found} <= {"train.py"}


def test_a_subprojects_pins_are_not_another_folders_stack(tmp_path):
    """gaudi/requirements.txt pins TRL 0.9.6 for its own SFT scripts; grpo/train.py is judged
    against the declarations of its own folder and those above (none: TRL assumed)."""
    _repo(
        tmp_path,
        {
            "gaudi/requirements.txt": "trl==0.9.6\ntransformers==4.40.0\n",
            "grpo/train.py": TRAIN.format(keys="num_generations=4,"),
        },
    )
    rc, found = _hook(tmp_path, "gaudi/requirements.txt")
    assert not [f for f in found if f["script"] == "grpo/train.py" and f["severity"] == "error"], found


INLINE = """# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "trl==0.22.2",
#     "transformers==4.56.1",
# ]
# ///
"""


def test_a_scripts_inline_metadata_is_its_stack(tmp_path):
    """PEP 723: ``uv run train.py`` installs the script's own dependencies, whatever the
    repository's requirements say; max_prompt_length exists in its TRL 0.22.2."""
    _repo(
        tmp_path,
        {
            "requirements.txt": "trl==0.29.0\n",
            "train.py": INLINE + TRAIN.format(keys="max_prompt_length=512,\n    num_generations=4,"),
        },
    )
    rc, found = _hook(tmp_path, "requirements.txt")
    assert not [f for f in found if f["script"] == "train.py" and f["rule"] in ("CFG001", "DCL001")], found
    (tmp_path / "train.py").write_text(TRAIN.format(keys="max_prompt_length=512,\n    num_generations=4,"))
    rc, found = _hook(tmp_path, "requirements.txt")  # without it: the repository's TRL 0.29.0
    assert ("CFG001", "max_prompt_length") in {(f["rule"], f["evidence"].get("key")) for f in found}


def test_a_script_that_imports_unsloth_is_not_judged_by_trls_own_known_failures(tmp_path):
    """unsloth rewrites TRL's trainers at import (its own fix of warnings_issued on transformers
    5.1, unsloth#7854): TRL 0.22.2's trainer failure on transformers 5.2 is not this script's."""
    inline = INLINE.replace("transformers==4.56.1", "transformers==5.2.0")
    body = TRAIN.format(keys="num_generations=4,")
    _repo(
        tmp_path,
        {"plain.py": inline + body, "sloth.py": inline + "from unsloth import FastLanguageModel\n" + body},
    )
    rc, found = _hook(tmp_path)
    knf = {f["script"] for f in found if f["rule"] == "KNF001" and f["severity"] == "error"}
    assert knf == {"plain.py"}
