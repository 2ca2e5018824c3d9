"""A known failure whose catalogue fix is a config change (``top_p: 1.0  # or
vllm_importance_sampling_correction: false``) carries it as remedies, so ``envdoctor fix`` applies
the first that holds instead of leaving the warning as manual advice (RedButton 7e01228 / 6fbe20b,
heldout-2026-11-28e: KNF001 left after fix)."""

from __future__ import annotations

from envdoctor.checks.catalogue_fix import config_remedies
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import checkable_failures
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import H100, snapshot

STACK = {
    "trl": "1.2.0",
    "vllm": "0.18.0",
    "torch": "2.10.0",
    "transformers": "4.57.1",
    "accelerate": "1.12.0",
}


def _entry(fid: str):
    return next(f for f in checkable_failures() if f.id == fid)


def test_the_fix_and_its_alternatives_are_read_for_the_entrys_own_keys():
    got = config_remedies(_entry("trl-is-correction-truncated-sampling-top-p-colocate"))
    assert [(r.config_set, r.config_remove) for r in got] == [
        ({"top_p": 1.0}, ()),
        ({"vllm_importance_sampling_correction": False}, ()),
    ]
    got = config_remedies(_entry("trl-is-correction-truncated-sampling-top-k"))
    assert got[0].config_remove == ("top_k",)


def test_a_fix_in_words_about_packages_gives_no_config_remedy():
    assert all(
        not config_remedies(f)
        for f in checkable_failures()
        if not f.config and f.fix.startswith("pip install")
    )


def test_fix_applies_the_catalogue_config_fix_and_the_error_goes():
    """A catalogue entry that fails on every run and whose fix is a config change: Liger's GRPO
    loss refuses importance_sampling_level "sequence" on TRL 0.20-0.27 (an error): `fix` sets the
    first remedy that holds and the finding goes."""
    stack = {**STACK, "trl": "0.25.0", "vllm": "0.10.2", "torch": "2.8.0", "liger-kernel": "0.6.2"}
    facts = from_dict(snapshot(1, H100, packages=stack), "snap")
    cfg = {"use_liger_loss": True, "importance_sampling_level": "sequence", "use_vllm": False}
    plan = build_plan(config_dict=cfg, launch="python train.py", live=False)
    closure = close(facts, plan, Rerun())
    assert any(f.rule == "KNF001" and f.severity.value == "error" for f in closure.before)
    assert "KNF001" in closure.fixed
    assert closure.changes.config_set.get("importance_sampling_level") == "token"
    assert not [f for f in closure.after if f.rule == "KNF001" and f.severity.value != "info"]


def test_a_bias_that_hinges_on_the_model_is_advice_fix_leaves_alone():
    """The importance-sampling bias of a truncated sampler (top_p 0.95) depends on how much mass
    the model's distribution loses to the truncation (depends_on: model): info, which `fix` does
    not change (only warnings and errors are fixed); its remedies are still data."""
    facts = from_dict(snapshot(1, H100, packages=STACK), "snap")
    cfg = {"use_vllm": True, "vllm_mode": "colocate", "top_p": 0.95, "vllm_gpu_memory_utilization": 0.3}
    plan = build_plan(config_dict=cfg, launch="python train.py", live=False)
    closure = close(facts, plan, Rerun())
    knf = [f for f in closure.before if f.rule == "KNF001"]
    assert knf and all(f.severity.value == "info" for f in knf)
    assert knf[0].remedy is not None and knf[0].remedy.config_set == {"top_p": 1.0}
    assert "KNF001" not in closure.fixed
    assert "top_p" not in closure.changes.config_set
