"""Rules whose fix was text only before now carry it as line edits that ``envdoctor fix`` (CFG007,
CFG008) and ``envdoctor hook --fix`` (REP003–REP012, DCL008) apply after the fix closure proved
them: each test makes the rule fire, applies the fix, and checks again with no finding of it (and
nothing new at warning or error). Issue 35 items 2, 3 and 5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

STACK = ["--assume", "trl==1.16.0", "--assume", "transformers==5.0.0"]
SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer, TrlParser

def reward(completions, **kwargs):
    return [0.0 for _ in completions]

config = TrlParser((GRPOConfig,)).parse_args_and_config()[0]
trainer = GRPOTrainer(
    model="Qwen/Qwen2.5-0.5B",
    reward_funcs=[reward],
{extra}    args=config,
)
trainer.train()
"""
CONFIG = "use_vllm: false\nnum_generations: 4\nper_device_train_batch_size: 4\n"


def _files(tmp: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return tmp


def _loud(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule and f["severity"] != "info"]


def _fix(tmp: Path, *extra: str) -> dict:
    out = run_cli(
        "fix",
        "--format",
        "json",
        *STACK,
        "--config",
        "grpo.yaml",
        *extra,
        "--",
        "python",
        "train.py",
        cwd=tmp,
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _check(tmp: Path) -> dict:
    out = run_cli(
        "check", "--format", "json", *STACK, "--config", "grpo.yaml", "--", "python", "train.py", cwd=tmp
    )
    return json.loads(out.stdout)


def _added(before: dict, after: dict) -> list[str]:
    said = {(f["rule"], f["message"]) for f in before["findings"]}
    return [
        f["rule"]
        for f in after["findings"]
        if f["severity"] != "info" and (f["rule"], f["message"]) not in said
    ]


def test_cfg007_the_first_of_a_key_set_twice_is_deleted_and_the_run_stays_the_same(tmp_path):
    config = (
        "use_vllm: false\nnum_generations: 8  # old\nper_device_train_batch_size: 4\nnum_generations: 4\n"
    )
    r = _files(tmp_path, {"grpo.yaml": config, "train.py": SCRIPT.format(extra="")})
    before = _check(r)
    assert _loud(before, "CFG007")
    (f,) = _loud(before, "CFG007")
    assert f["remedy"]["files"] == [
        {"path": "grpo.yaml", "line": 2, "old": ["num_generations: 8  # old"], "new": []}
    ]
    diff = run_cli("fix", "--diff", *STACK, "--config", "grpo.yaml", "--", "python", "train.py", cwd=r)
    assert "-num_generations: 8  # old" in diff.stdout and (r / "grpo.yaml").read_text() == config
    done = _fix(r)
    assert "CFG007" in done["fixed"]
    assert (
        r / "grpo.yaml"
    ).read_text() == "use_vllm: false\nper_device_train_batch_size: 4\nnum_generations: 4\n"
    after = _check(r)
    assert not _loud(after, "CFG007") and not _added(before, after)


def test_cfg007_a_block_value_goes_with_its_key(tmp_path):
    config = (
        "use_vllm: false\nmodel_init_kwargs:\n  torch_dtype: float16\n# the model\n\nnum_generations: 4\n"
    )
    config += "per_device_train_batch_size: 4\nmodel_init_kwargs:\n  torch_dtype: bfloat16\n"
    r = _files(tmp_path, {"grpo.yaml": config, "train.py": SCRIPT.format(extra="")})
    _fix(r)
    text = (r / "grpo.yaml").read_text()
    assert "float16\n" not in text.replace("bfloat16", "") and "# the model" in text
    assert not _loud(_check(r), "CFG007")


def test_cfg008_an_unknown_keyword_is_taken_out_of_the_call(tmp_path):
    r = _files(tmp_path, {"grpo.yaml": CONFIG, "train.py": SCRIPT.format(extra="    eval_funcs=[reward],\n")})
    before = _check(r)
    (f,) = _loud(before, "CFG008")
    assert f["remedy"]["files"] == [
        {"path": "train.py", "line": 10, "old": ["    eval_funcs=[reward],"], "new": []}
    ]
    done = _fix(r)
    assert "CFG008" in done["fixed"] and done["changes"]["files"]
    assert "eval_funcs" not in (r / "train.py").read_text()
    compile((r / "train.py").read_text(), "train.py", "exec")
    after = _check(r)
    assert not _loud(after, "CFG008") and not _added(before, after)


def test_cfg008_a_misspelt_parameter_is_renamed_not_dropped(tmp_path):
    """huggingface/trl#4020: TRL 0.22's quickstart passed reward_function=; the parameter is
    reward_funcs (the fix of that PR)."""
    script = SCRIPT.format(extra="").replace("reward_funcs=[reward]", "reward_function=[reward]")
    r = _files(tmp_path, {"grpo.yaml": CONFIG, "train.py": script})
    done = _fix(r)
    assert "CFG008" in done["fixed"]
    assert "    reward_funcs=[reward],\n" in (r / "train.py").read_text()
    assert not _loud(_check(r), "CFG008")


def test_fix_writes_no_file_on_a_healthy_setup(tmp_path):
    r = _files(tmp_path, {"grpo.yaml": CONFIG, "train.py": SCRIPT.format(extra="")})
    done = _fix(r)
    assert "files" not in done["changes"] and not done["fixed"]
    assert (r / "train.py").read_text() == SCRIPT.format(extra="") and (r / "grpo.yaml").read_text() == CONFIG


# ---- the repository's launch scripts and requirement files: hook --fix --------------------------------

GRPO = "use_vllm: true\nvllm_mode: server\nnum_generations: 4\nper_device_train_batch_size: 4\n"
REQS = "trl==0.19.1\nvllm==0.8.5.post1\ntransformers==4.52.4\ntorch==2.6.0\n"
TRAIN = "from trl import GRPOTrainer\n"


def _hook(r: Path, *args: str) -> dict:
    out = run_cli("hook", "--format", "json", *args, "grpo.yaml", cwd=r)
    return {
        "rc": out.returncode,
        "stderr": out.stderr,
        "data": json.loads(out.stdout) if out.stdout.strip() else {},
    }


def _rules(hooked: dict) -> list[str]:
    return [
        f["rule"]
        for fe in hooked["data"].get("files", [])
        for f in fe["report"]["findings"]
        if f["severity"] != "info"
    ]


LINE = "accelerate launch --num_processes 2 train.py --config grpo.yaml\n"
CASES = {
    "REP003": {"run.sh": "CUDA_VISIBLE_DEVICES=0,1\n" + LINE},
    "REP004": {
        "run.sh": b"#!/bin/bash\r\naccelerate launch --num_processes 2 train.py \\\r\n"
        b"  --config grpo.yaml\r\n"
    },
    "REP005": {"run.sh": "accelerate launch --num_processes 2 train.py\n  --config grpo.yaml\n  --seed 1\n"},
    "REP006": {
        "run.sh": "NCCL_P2P_DISABLE=1\naccelerate launch --num_processes 2 train.py --config grpo.yaml\n"
    },
    "REP007": {"run.sh": LINE.rstrip("\n") + ' --lora_target_modules "q_proj", "v_proj"\n'},
    "REP009": {
        "run.sh": "accelerate launch --num_processes 2 train.py --config /home/alice/proj/grpo.yaml\n",
    },
    "REP011": {
        "run.sh": "CUDA_VISIBLE_DEVICES=2 trl vllm-serve --model Qwen/Qwen2.5-0.5B "
        "--gpu-memory-utilization 1.0 &\n"
        "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py --config grpo.yaml\n"
    },
    "REP012": {
        "run.sh": "CUDA_VISIBLE_DEVICES=2 trl vllm-serve --model Qwen/Qwen2.5-0.5B\n"
        "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py --config grpo.yaml\n"
    },
    "DCL008": {"requirements.txt": REQS.replace("torch==2.6.0", "torch==2.6.0+cu124")},
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_hook_fix_applies_the_repository_rules_line_edits_and_the_hook_is_clean(tmp_path, rule):
    files = {"grpo.yaml": GRPO, "train.py": TRAIN, "requirements.txt": REQS, **CASES[rule]}
    r = _files(tmp_path, files)
    before = _hook(r)
    assert rule in _rules(before), before
    shown = _hook(r, "--fix", "--diff")
    assert "+++ b/" in shown["stderr"]
    assert all((r / n).read_bytes() == (t if isinstance(t, bytes) else t.encode()) for n, t in files.items())
    done = _hook(r, "--fix")
    assert "envdoctor: fixed" in done["stderr"] and rule in done["stderr"]
    assert rule not in _rules(done)
    again = _hook(r)
    assert rule not in _rules(again)
    assert sorted(set(_rules(again)) - set(_rules(before))) == []  # nothing new


def test_hook_fix_says_why_an_unset_variable_stays(tmp_path):
    r = _files(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "train.py": TRAIN,
            "requirements.txt": REQS,
            "run.sh": "accelerate launch --num_processes 2 train.py --config $CONFIG_DIR/grpo.yaml\n",
        },
    )
    before = _hook(r)
    assert "REP008" in _rules(before)
    done = _hook(r, "--fix")
    assert (
        "not written: REP008" in done["stderr"]
        and "$CONFIG_DIR (the user's path or name) is not in the repository" in done["stderr"]
    )
    assert "REP008" in _rules(done)


def test_plain_hook_keeps_the_rules_fix_text(tmp_path):
    """Without --fix the hook proves nothing on the repository's files: the REP rules' fix text
    stays as the rule wrote it (never "no fix envdoctor could prove")."""
    r = _files(tmp_path, {"grpo.yaml": GRPO, "train.py": TRAIN, "requirements.txt": REQS, **CASES["REP006"]})
    out = _hook(r)
    (f,) = [f for fe in out["data"]["files"] for f in fe["report"]["findings"] if f["rule"] == "REP006"]
    assert f["fix"].startswith("In run.sh: write `export NCCL_P2P_DISABLE=1`") and "remedy" not in f


def test_hook_fix_changes_nothing_in_a_healthy_repository(tmp_path):
    files = {
        "grpo.yaml": GRPO,
        "train.py": TRAIN,
        "requirements.txt": REQS,
        "run.sh": "export NCCL_P2P_DISABLE=1\n"
        "accelerate launch --num_processes 2 train.py \\\n  --config grpo.yaml\n",
    }
    r = _files(tmp_path, files)
    done = _hook(r, "--fix")
    assert "envdoctor: fixed" not in done["stderr"]
    assert all((r / n).read_text() == t for n, t in files.items())


def test_cfg007_with_a_key_another_fix_sets_gives_one_consistent_file(tmp_path):
    """CFG002 sets num_generations in memory, CFG007 deletes the first of its two lines: the edit
    keeps the value the other fix set, and the file written reads back as the proved config."""
    config = "use_vllm: false\nnum_generations: 4\nper_device_train_batch_size: 4\nnum_generations: 3\n"
    r = _files(tmp_path, {"grpo.yaml": config, "train.py": SCRIPT.format(extra="")})
    before = _check(r)
    assert _loud(before, "CFG002") and _loud(before, "CFG007")
    done = _fix(r)
    assert {"CFG002", "CFG007"} <= set(done["fixed"]) and not any(u["rule"] == "-" for u in done["unfixed"])
    text = (r / "grpo.yaml").read_text()
    assert text.count("num_generations") == 1
    after = _check(r)
    assert not _loud(after, "CFG002") and not _loud(after, "CFG007") and not _added(before, after)


def test_hook_fix_renames_a_keyword_in_a_repository_script(tmp_path):
    """A training script of the repository whose GRPOTrainer call names a parameter of another
    spelling (huggingface/trl#4020 on TRL 0.22): hook --fix edits the call, the hook is clean."""
    script = SCRIPT.format(extra="").replace("reward_funcs=[reward]", "reward_function=[reward]")
    reqs = "trl==0.23.0\nvllm==0.10.2\ntransformers==4.56.1\ntorch==2.8.0\n"
    r = _files(
        tmp_path, {"grpo.yaml": "num_generations: 4\n", "src/train.py": script, "requirements.txt": reqs}
    )
    assert "CFG008" in _rules(_hook(r))
    done = _hook(r, "--fix")
    assert "fixed src/train.py (line edits (CFG008))" in done["stderr"]
    assert "reward_funcs=[reward]" in (r / "src/train.py").read_text()
    assert "CFG008" not in _rules(_hook(r))


def test_dcl008_edits_a_utf16_requirement_file_in_its_encoding(tmp_path):
    """`pip freeze > requirements.txt` in PowerShell writes UTF-16 with CRLF ends; pip reads it
    by its byte-order mark, and so does the edit: the file stays UTF-16."""
    text = REQS.replace("torch==2.6.0", "torch==2.6.0+cu124").replace("\n", "\r\n")
    r = _files(tmp_path, {"grpo.yaml": GRPO, "train.py": TRAIN, "requirements.txt": text.encode("utf-16")})
    assert "DCL008" in _rules(_hook(r))
    _hook(r, "--fix")
    data = (r / "requirements.txt").read_bytes()
    assert data.startswith(b"\xff\xfe")
    assert data.decode("utf-16").startswith("--extra-index-url https://download.pytorch.org/whl/cu124\r\n")
    assert "DCL008" not in _rules(_hook(r))


def test_rep001_a_moved_recipe_is_pointed_at_the_file_of_that_name(tmp_path):
    r = _files(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "train.py": TRAIN,
            "requirements.txt": REQS,
            "README.md": "```bash\naccelerate launch train.py --config configs/Qwen-7B/grpo.yaml\n```\n",
            "configs/Qwen2_5-7B/grpo.yaml": GRPO,
        },
    )
    before = _hook(r)
    assert "REP001" in _rules(before)
    done = _hook(r, "--fix")
    assert "line edits (REP001)" in done["stderr"]
    assert "--config configs/Qwen2_5-7B/grpo.yaml" in (r / "README.md").read_text()
    assert "REP001" not in _rules(_hook(r))
