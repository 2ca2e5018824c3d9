"""A launch line that names TRL's own example script where the file is not here (a line of TRL's
docs run from a TRL checkout): what the script builds comes from rules/knowledge/
trl_example_scripts.yaml. TRL 1.0's examples/scripts/async_grpo.py builds AsyncGRPOTrainer, whose
config is no GRPOConfig: GRPO's batch check does not run (set 28: a healthy setup got CFG002)."""

from __future__ import annotations

from tests.conftest import MODERN, findings, snapshot

CFG = {"per_device_train_batch_size": 1, "max_completion_length": 4096}


def cfg002(launch: str, trl: str = "1.0.0"):
    found = [
        f for f in findings(snapshot(2, packages={**MODERN, "trl": trl}), CFG, launch) if f.rule == "CFG002"
    ]
    return found[0] if found else None


def test_trls_async_grpo_example_not_here_is_not_judged_by_grpos_batch_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = cfg002("CUDA_VISIBLE_DEVICES=0 accelerate launch examples/scripts/async_grpo.py")
    assert f is not None and f.severity.value == "info"
    assert "AsyncGRPOTrainer" in f.message and "examples/scripts/async_grpo.py" in f.message


def test_other_scripts_keep_the_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cfg002("accelerate launch examples/scripts/grpo.py").severity.value == "error"
    assert cfg002("accelerate launch my/async_grpo.py").severity.value == "error"  # not TRL's path
    # before TRL shipped it, the name says nothing
    assert cfg002("accelerate launch examples/scripts/async_grpo.py", trl="0.29.0").severity.value == "error"
