"""A check imports a rule module only when one of its rules can run (envdoctor/checks/rule_index.py
says each rule's module and needs without importing it), and its report is the one it gives with
every rule module loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envdoctor.checks import registry
from envdoctor.checks.rule_index import INDEX
from tests.conftest import ROOT

_SCRIPT = """
import json, sys
if sys.argv[1] == "all":
    from envdoctor.checks import import_all
    import_all()
from envdoctor.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""

#: rule modules whose every rule needs a config or a launch command (or use_vllm on)
PLAN_ONLY = ("layout_launchers", "layout_server", "deepspeed_ref", "trl_overrides", "config_values")


def _check(cwd: Path, preload: str, *args: str) -> tuple[str, set[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, preload, "check", "--no-network", "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert "MODULES " in proc.stderr, proc.stderr
    return proc.stdout, set(json.loads(proc.stderr.rsplit("MODULES ", 1)[1]))


def test_the_index_is_the_registry():
    """After adding a rule or changing its needs: python -m envdoctor.checks.registry."""
    text = (ROOT / "envdoctor" / "checks" / "rule_index.py").read_text(encoding="utf-8")
    assert text == registry.index_text(), "stale rule index: python -m envdoctor.checks.registry"
    assert set(INDEX) == set(registry.all_rules())
    assert all(needs == registry.RULES[rid].needs for rid, (_, needs) in INDEX.items())


def test_a_rule_module_loads_only_when_one_of_its_rules_runs(tmp_path):
    facts = ROOT / "examples" / "seed-000" / "facts.json"
    report, modules = _check(tmp_path, "some", "--facts", str(facts))
    ran = {r for area in json.loads(report)["areas"] for r in area["ran"]}
    for name in PLAN_ONLY:
        assert not ran & {rid for rid, (mod, _) in INDEX.items() if mod == name}
        assert f"envdoctor.checks.{name}" not in modules, name
    for rid in ran:
        assert f"envdoctor.checks.{INDEX[rid][0]}" in modules, rid


def test_the_report_is_the_one_with_every_rule_module_loaded(tmp_path):
    seed = ROOT / "examples" / "seed-000"
    for args in (
        ("--facts", str(seed / "facts.json")),
        ("--facts", str(seed / "facts.json"), "--config", str(seed / "grpo.yaml")),
        ("--facts", str(seed / "facts.json"), "--config", str(seed / "grpo.yaml"), "--select", "LAY,MEM"),
    ):
        lazy, modules = _check(tmp_path, "some", *args)
        eager, all_modules = _check(tmp_path, "all", *args)
        assert lazy == eager, args
        assert all(f"envdoctor.checks.{name}" in all_modules for name in PLAN_ONLY)
