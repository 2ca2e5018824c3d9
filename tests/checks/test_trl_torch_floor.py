"""PKG004 and the resolver on TRL's undeclared torch floor (issue #35; held-out set 20's
qwen3-1.7B-MATH-RLVR-1535ae8: torch 2.4.1 + TRL 1.0.0 fails at `from trl import GRPOTrainer`
with ImportError on FSDPModule, which torch added in 2.6). rules/knowledge/requirement_floors.yaml
(scripts/derive_requirement_api.py, from TRL's wheels and torch's symbol history) holds the floor;
an installed vLLM's exact torch pin is met by the same plan."""

from __future__ import annotations

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.checks.resolver import plan_packages
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import Knowledge
from envdoctor.knowledge.requirements import api_floor
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import findings, snapshot

STACK = {
    "trl": "1.0.0",
    "torch": "2.4.1",
    "transformers": "4.57.1",
    "accelerate": "1.12.0",
    "datasets": "4.7.0",
}


def _floor_hits(**packages: str) -> list:
    got = findings(snapshot(1, packages={**STACK, **packages}))
    return [f for f in got if f.rule == "PKG004" and f.message.startswith("trl ")]


def test_trl_1_0_on_torch_2_4_is_an_error_naming_fsdpmodule():
    (hit,) = _floor_hits()
    assert hit.severity.value == "error"
    assert "`from torch.distributed.fsdp import FSDPModule`" in hit.message
    assert "declares no torch requirement" in hit.message and "torch 2.6.0" in hit.message
    assert hit.fix.startswith("pip install 'torch==2.6.0'")  # the nearest torch with the names
    assert "or keep torch 2.4.1: pip install 'trl==0.28.0'" in hit.fix  # the TRL whose imports 2.4.1 has
    assert hit.evidence["lacks"] == ["torch.distributed.fsdp:FSDPModule"]
    # a CUDA build's local label is the same release
    (local,) = _floor_hits(torch="2.4.1+cu124")
    assert local.severity.value == "error"


def test_quiet_where_the_floor_is_met_or_the_release_imports_nothing_newer():
    assert not _floor_hits(torch="2.6.0")
    assert not _floor_hits(trl="0.28.0")  # 0.28's imports are all in torch 2.4.1
    assert not _floor_hits(trl="1.16.0", torch="2.5.1")  # 1.14 on: DTensor, torch 2.5
    assert _floor_hits(trl="1.16.0", torch="2.4.1")


def test_neighbours_that_disagree_are_no_evidence_but_bound_a_plan():
    """TRL 0.29.0 is not scanned: 0.28.0 imports nothing torch 2.4.1 lacks, 0.29.1 FSDPModule."""
    kb = Knowledge()
    assert not _floor_hits(trl="0.29.0")
    assert api_floor(kb, "trl", "0.29.0", "torch") is None
    assert api_floor(kb, "trl", "0.29.0", "torch", strict=False) == "2.6.0"
    assert api_floor(kb, "trl", "9.0.0", "torch", strict=False) is None  # beyond the scanned span


def _closure(packages: dict[str, str]):
    facts = from_dict(snapshot(1, packages=packages), "t")
    return close(facts, build_plan(launch=None, config_dict=None, live=False), Rerun())


def test_the_fix_closure_holds():
    closure = _closure(STACK)
    assert "PKG004" in closure.fixed
    assert not [f for f in closure.after if f.severity.value == "error"]


def test_an_installed_vllms_exact_torch_pin_and_the_floor_in_one_plan():
    """vLLM 0.17.1 is built for torch 2.10.0: the plan moves torch there, not to 2.6.0."""
    packages = {**STACK, "vllm": "0.17.1"}
    ctx = Context(
        facts=from_dict(snapshot(1, packages=packages), "t"),
        plan=build_plan(launch=None, config_dict=None, live=False),
    )
    plan = plan_packages(ctx)
    assert plan.changes.get("torch") == "2.10.0" and "trl" not in plan.changes
    closure = _closure(packages)
    assert not [f for f in closure.after if f.severity.value == "error"]


def test_the_full_data_is_read_only_on_a_finding():
    ctx = Context(
        facts=from_dict(snapshot(1, packages={**STACK, "torch": "2.6.0"}), "t"),
        plan=build_plan(launch=None, config_dict=None, live=False),
        kb=Knowledge(),
    )
    run_rules(ctx)
    assert "requirement_api" not in ctx.kb._tables and "requirement_floors" in ctx.kb._tables


STUB = """\
import torch.distributed.fsdp as _fsdp
if not hasattr(_fsdp, "FSDPModule"):
    class _FSDPModuleStub:
        pass
    _fsdp.FSDPModule = _FSDPModuleStub
from trl import GRPOConfig, GRPOTrainer
GRPOTrainer(model="m", args=GRPOConfig(output_dir="o"), reward_funcs=len)
"""


def test_a_script_that_stubs_what_torch_lacks_before_importing_trl_is_told_not_blocked(tmp_path):
    """Set 22's grpo-machine-unlearning 8B stage 2 (read after it was measured): TRL 0.29.1 on
    torch 2.4.1 trained 300 of 300 steps because the script assigns a stand-in FSDPModule onto
    torch.distributed.fsdp before `from trl import …`: PKG004's error was false. Without the
    stand-in the same stack stays an error."""
    (tmp_path / "train.py").write_text(STUB)
    snap = snapshot(1, packages={**STACK, "trl": "0.29.1"})
    got = [f for f in findings(snap, launch=f"python {tmp_path / 'train.py'}") if f.rule == "PKG004"]
    (hit,) = [f for f in got if f.message.startswith("trl ")]
    assert hit.severity.value == "info" and "train.py:5" in hit.message
    (tmp_path / "plain.py").write_text(STUB.split("from trl", 1)[1].join(["from trl", ""]))
    got = [f for f in findings(snap, launch=f"python {tmp_path / 'plain.py'}") if f.rule == "PKG004"]
    assert [f.severity.value for f in got if f.message.startswith("trl ")] == ["error"]
