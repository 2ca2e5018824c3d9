"""LAY025: an accelerate config that names a DeepSpeed JSON and also sets the fields the JSON owns
(set 24's thread-ei-reasoning setup: `mixed_precision: bf16` beside
`deepspeed_config.deepspeed_config_file`, refused by accelerate's DeepSpeedPlugin at startup)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from envdoctor.remedy.file_edit import edit_all
from tests.conftest import MODERN, findings, snapshot

_DS = '{"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}'
_WITH_FILE = """\
compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  deepspeed_config_file: {tmp}/ds.json
  zero3_init_flag: false{extra}
distributed_type: DEEPSPEED
machine_rank: 0
main_training_function: main
{mixed}num_machines: 1
num_processes: 2
use_cpu: false
"""


def _write(tmp: Path, extra: str = "", mixed: str = "mixed_precision: bf16  # the run's dtype\n") -> str:
    (tmp / "ds.json").write_text(_DS)
    acc = tmp / "acc.yaml"
    acc.write_text(_WITH_FILE.format(tmp=tmp, extra=extra, mixed=mixed))
    return str(acc)


def _hits(line: str, packages: dict | None = None, config: dict | None = None) -> list:
    snap = snapshot(2, packages=packages or MODERN)
    return [f for f in findings(snap, config=config, launch=line) if f.rule == "LAY025"]


def test_mixed_precision_beside_a_deepspeed_file_is_an_error_and_fix_removes_it(tmp_path):
    acc = _write(tmp_path, extra="\n  zero_stage: 2")
    line = f"accelerate launch --config_file {acc} train.py"
    (hit,) = _hits(line)
    assert hit.severity is Severity.ERROR
    assert hit.evidence["keys"] == ["deepspeed_config.zero_stage", "mixed_precision"]
    assert hit.remedy is not None and len(hit.remedy.files) == 2
    text = Path(acc).read_text()
    after = edit_all(text, hit.remedy.files)
    assert "zero_stage:" not in after and "mixed_precision:" not in after
    assert "zero3_init_flag: false" in after and "num_processes: 2" in after  # the rest kept
    closure = close(
        from_dict(snapshot(2, packages=MODERN), "snap"), build_plan(launch=line, live=False), Rerun()
    )
    assert "LAY025" in closure.fixed and not [f for f in closure.after if f.rule == "LAY025"]


def test_training_arguments_deepspeed_with_a_zero_config_is_refused_too(tmp_path):
    (tmp_path / "ds.json").write_text(_DS)
    acc = tmp_path / "zero2.yaml"
    acc.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\nnum_processes: 2\n")
    line = f"accelerate launch --config_file {acc} train.py"
    (hit,) = _hits(line, config={"deepspeed": str(tmp_path / "ds.json")})
    assert hit.evidence["keys"] == ["deepspeed_config.zero_stage"]


@pytest.mark.parametrize(
    ("extra", "mixed", "flags", "packages"),
    [
        ("", "", "", None),  # what `accelerate config` writes for a DeepSpeed file: nothing refused
        ("", "mixed_precision: bf16\n", "--mixed_precision bf16 ", None),  # the line's value wins
        ("\n  zero_stage: 2", "", "", {**MODERN, "accelerate": "0.15.0"}),  # before the check
        ("", "mixed_precision: bf16\n", "--cpu ", None),
    ],
)
def test_quiet_where_accelerate_refuses_nothing(tmp_path, extra, mixed, flags, packages):
    acc = _write(tmp_path, extra=extra, mixed=mixed)
    assert _hits(f"accelerate launch {flags}--config_file {acc} train.py", packages=packages) == []


def test_quiet_for_a_zero_config_without_a_json_and_for_torchrun(tmp_path):
    acc = tmp_path / "zero2.yaml"
    acc.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\nmixed_precision: bf16\n")
    assert _hits(f"accelerate launch --config_file {acc} train.py") == []
    assert _hits("torchrun --nproc_per_node 2 train.py", config={"deepspeed": "ds.json"}) == []


def test_past_the_horizon_it_is_a_warning_naming_the_release_read(tmp_path):
    acc = _write(tmp_path)
    (hit,) = _hits(
        f"accelerate launch --config_file {acc} train.py", packages={**MODERN, "accelerate": "9.0.0"}
    )
    assert hit.severity is Severity.WARNING and "newer than envdoctor knows" in hit.message


def test_proving_the_fix_leaves_the_plan_as_read(tmp_path):
    """check proves each remedy on a copy of the plan: the accelerate config's edit in memory must
    not reach the plan itself (it did: `envdoctor fix` then found nothing left to fix)."""
    from envdoctor.commands.fix import run_fix

    acc = _write(tmp_path)
    plan = build_plan(launch=f"accelerate launch --config_file {acc} train.py", live=False)
    result = run_fix(from_dict(snapshot(2, packages=MODERN), "snap"), plan, None, None, False)
    assert plan.accelerate.get("mixed_precision") == "bf16"
    assert "LAY025" in result["json"]["fixed"] and len(result["closure"].changes.files) == 1
