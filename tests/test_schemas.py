"""The JSON Schemas shipped in the package (envdoctor/schemas/) hold for every JSON output: the
report (check, triage, diff, preflight), the hook's, the snapshot (collect; old snapshots too).
The fix format's schema (fix.schema.json) is tested where ``envdoctor fix`` is."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from envdoctor import schemas
from tests.conftest import LEGACY, ROOT, run_cli, snapshot
from tests.schema_check import errors

SEED = ROOT / "examples" / "seed-000"


def valid(doc, name: str) -> None:
    found = errors(doc, name)
    assert not found, "\n".join(found[:20])


def test_the_validator_can_fail():
    good = json.loads((SEED / "facts.json").read_text())
    valid(good, "snapshot")
    assert errors({**good, "schema": "envdoctor.facts/9"}, "snapshot")
    assert errors({**good, "gpus": [{"index": "zero"}]}, "snapshot")
    assert errors({"schema": "envdoctor.hook/1", "files": [{"file": "x"}]}, "hook")


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--facts", "facts.json", "--config", "grpo.yaml", "--", "python", "train.py"),
        ("check", "--facts", "facts.json", "--config", "grpo.yaml", "-v", "--", "torchrun", "train.py"),
    ],
)
def test_check_json(args):
    proc = run_cli(*args[:1], "--format", "json", *args[1:], cwd=SEED)
    valid(json.loads(proc.stdout), "report")


def test_check_json_with_suppressions(tmp_path):
    for name in ("facts.json", "grpo.yaml"):
        shutil.copy(SEED / name, tmp_path / name)
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.envdoctor]\nignore = ["ALC003", {rule = "LAY003", reason = "pinned in train.py"}]\n'
    )
    proc = run_cli("check", "--format", "json", "--facts", "facts.json", "--config", "grpo.yaml",
                   "--", "python", "train.py", cwd=tmp_path)  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["suppressed"]
    valid(data, "report")


def test_triage_and_diff_json(tmp_path, write_json):
    (tmp_path / "t.log").write_text(
        'Traceback (most recent call last):\n  File "x.py", line 1\nFooError: odd\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    valid(json.loads(run_cli("triage", "t.log", "--format", "json", cwd=tmp_path).stdout), "report")
    a = write_json(snapshot(2, packages=LEGACY))
    b = write_json(snapshot(1, packages=LEGACY))
    diff = run_cli("diff", str(a), str(b), "--format", "json", cwd=tmp_path)
    valid(json.loads(diff.stdout), "report")


def test_hook_json(tmp_path):
    (tmp_path / "grpo.yaml").write_text("num_generations: 1\nper_device_train_batch_size: 4\n")
    (tmp_path / "accelerate.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: 2\n")
    (tmp_path / "other.yaml").write_text("num_generations: 4\nper_device_train_batch_size: 4\n")
    proc = run_cli("hook", "grpo.yaml", "accelerate.yaml", "--format", "json", "--assume", "trl==1.16.0",
                   cwd=tmp_path)  # fmt: skip
    valid(json.loads(proc.stdout), "hook")


def test_preflight_report_json():
    from envdoctor.api import preflight_report
    from envdoctor.report import render

    _, report = preflight_report(
        config={"num_generations": 4, "use_cpu": True}, facts=snapshot(2), launch="python t.py", network=False
    )
    valid(json.loads(render(report, "json")), "report")


def test_collect_writes_a_snapshot_with_its_version_and_time(tmp_path):
    proc = run_cli("collect", "--no-gpu", cwd=tmp_path)
    data = json.loads(proc.stdout)
    valid(data, "snapshot")
    from envdoctor import __version__

    assert data["envdoctor"] == __version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data["taken_at"])
    (tmp_path / "s.json").write_text(proc.stdout)
    from envdoctor.facts.snapshot import load, to_dict

    again = to_dict(load(str(tmp_path / "s.json")))  # read back: its own version and time kept
    assert (again["envdoctor"], again["taken_at"]) == (data["envdoctor"], data["taken_at"])


def test_old_snapshots_stay_readable_and_valid():
    from envdoctor.facts.snapshot import load, to_dict

    for path in [SEED / "facts.json", *sorted((ROOT / "examples").glob("*/facts.json"))]:
        data = json.loads(path.read_text())
        assert "taken_at" not in data or data["taken_at"]
        valid(data, "snapshot")
        assert "taken_at" not in to_dict(load(str(path))) or "taken_at" in data  # nothing invented
    valid(snapshot(2, packages=LEGACY), "snapshot")


def test_schemas_ship_in_the_package():
    """The wheel packs every file under envdoctor/ (pyproject's hatch config); nothing
    ignores the schemas; each loads through importlib.resources."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert conf["packages"] == ["envdoctor"] and not conf.get("exclude")
    ignored = (ROOT / ".gitignore").read_text().split()
    assert not [p for p in ignored if p.endswith(".json")]
    for name in ("report", "hook", "snapshot"):
        s = schemas.load(name)
        assert s["$schema"].endswith("2020-12/schema") and s["$id"].endswith(
            f"envdoctor/schemas/{name}.schema.json"
        )


def test_fix_json(tmp_path):
    """`envdoctor fix --format json` on the seed's broken launch, written and shown with --diff."""
    for name in ("facts.json", "grpo.yaml"):
        shutil.copy(SEED / name, tmp_path / name)
    proc = run_cli("fix", "--format", "json", "--facts", "facts.json", "--config", "grpo.yaml",
                   "--", "python", "train.py", cwd=tmp_path)  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["fixed"] == ["LAY003"] and data["changes"]["launch"]
    valid(data, "fix")
    broken = {**data, "changes": {**data["changes"], "packages": {"vllm": ""}}}
    assert errors(broken, "fix")  # a package without its exact version is no remedy
