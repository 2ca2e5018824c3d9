"""PKG014 on a declared stack (the hook): a launch that uses DeepSpeed (an accelerate config whose
distributed_type is DEEPSPEED, ``--use_deepspeed``, TrainingArguments' ``deepspeed``, the deepspeed
launcher) while the repository's declarations name no deepspeed, nor a package that brings it: an
environment built from them lacks it, and the launch raises at start (a warning: the image may
install it elsewhere). Issue #35, set 25: dpo-exp-b578d3b."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, committed_repo

LAUNCH = f"accelerate launch --config_file {CONFIGS[1]} train.py --config {CONFIGS[0]}"
TRAIN = "from trl import GRPOTrainer\n"


def _hook(repo, launch: str | None = LAUNCH) -> str:
    out = run_cli("hook", *(["--launch", launch] if launch else []), *CONFIGS, "--select", "PKG014", cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return " ".join(out.stdout.split())


def test_a_deepspeed_launch_the_declarations_do_not_install_is_a_warning(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "trl==0.29.0\ntorch==2.9.1\n", "train.py": TRAIN})
    text = _hook(repo)
    assert "PKG014" in text and "distributed_type: DEEPSPEED" in text
    assert "declares no deepspeed" in text and "declare 'deepspeed==0.18.9'" in text


@pytest.mark.parametrize(
    "reqs",
    [
        "trl==0.29.0\ndeepspeed==0.16.9\n",
        "trl==0.29.0\naccelerate[deepspeed]>=1.4\n",
        "trl[deepspeed]==0.29.0\n",
    ],
)
def test_quiet_where_the_declarations_bring_deepspeed(tmp_path, reqs):
    repo = committed_repo(tmp_path, {"requirements.txt": reqs, "train.py": TRAIN})
    assert "PKG014" not in _hook(repo)


def test_quiet_without_a_deepspeed_launch(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "trl==0.29.0\n", "train.py": TRAIN})
    assert "PKG014" not in _hook(repo, "python train.py --config recipes/grpo/config_demo.yaml")
