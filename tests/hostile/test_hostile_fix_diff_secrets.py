"""The diffs ``fix --diff`` and ``hook --fix --diff`` print hold no secret of the config
(issue: hostile input, round four). A secret-named key's value folded onto a line of its own
(``hub_token: >-`` then the token) is a diff context line that no pattern can tell is a secret:
only the plan knows it (``redact.plan_secrets``). ``fix``'s text redacted its lines without
the plan's secrets and ``hook --fix --diff`` printed its diff on stderr with no redaction or
escaping at all; both now pass every line through ``redact.clean`` with them."""

from __future__ import annotations

import subprocess

from tests.hostile.test_hostile_fix_writes import FACTS, LAUNCH
from tests.hostile.test_hostile_inputs import cli

SECRET = "CANARYfoldedsecret9"
CONFIG = f"per_device_train_batch_size: 3\nhub_token: >-\n  {SECRET}\nnum_generations: 8\nhub_model_id: x\n"


def test_fix_diff_masks_a_folded_secret_value(tmp_path):
    config = tmp_path / "grpo.yaml"
    config.write_text(CONFIG)
    for fmt in ("text", "json"):
        proc = cli(
            tmp_path,
            "fix",
            "--diff",
            "--format",
            fmt,
            "--facts",
            str(FACTS),
            "--config",
            str(config),
            *LAUNCH,
        )
        assert proc.returncode == 0, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr, fmt
    assert (
        "+num_generations: 6"
        in cli(tmp_path, "fix", "--diff", "--facts", str(FACTS), "--config", str(config), *LAUNCH).stdout
    )


def test_hook_fix_diff_masks_a_folded_secret_value(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "grpo.yaml").write_text(CONFIG)
    (tmp_path / "accelerate.yaml").write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\nnum_machines: 1\n"
    )
    (tmp_path / "requirements.txt").write_text("trl==0.19.1\n")
    proc = cli(tmp_path, "hook", "--fix", "--diff", "grpo.yaml", "accelerate.yaml")
    assert "+num_generations: 6" in proc.stderr, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert SECRET in (tmp_path / "grpo.yaml").read_text()  # --diff writes nothing
