"""PKG004 on an unmet floor of a requirement the run imports, judged at the API (issue 36 item 6,
issue 35): rules/knowledge/requirement_api.yaml (scripts/derive_requirement_api.py) holds the
names each TRL release imports from transformers / accelerate / datasets on GRPOTrainer's import
path, and the releases of the requirement that lack one. An error names the missing import; a
floor whose every name is there is pip check's complaint (a warning that keeps the pin as its fix);
a pair the data does not cover keeps the error of rules/knowledge/requirements.yaml."""

from __future__ import annotations

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import Knowledge
from envdoctor.knowledge.requirements import _judged, api_verdict
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import findings, snapshot

STACK = {"torch": "2.7.1", "accelerate": "1.10.0", "datasets": "3.6.0"}


def _pkg004(trl: str, transformers: str) -> list:
    snap = snapshot(1, packages={**STACK, "trl": trl, "transformers": transformers})
    return [f for f in findings(snap) if f.rule == "PKG004"]


def test_a_name_the_installed_release_lacks_is_an_error_that_names_it():
    """TRL 0.29.0 (curated floor transformers>=4.56.2) beside transformers 4.51.3 (the
    OpenEnvHackathon setup of set 10): trl/trainer/callbacks.py does `from transformers import
    is_trackio_available`, which transformers added in 4.54.0: ImportError at `from trl import
    GRPOTrainer`. 0.29.0 is not scanned; both scanned neighbours (0.28.0, 0.29.1) import it."""
    (hit,) = _pkg004("0.29.0", "4.51.3")
    assert hit.severity.value == "error"
    assert "`from transformers import is_trackio_available`" in hit.message
    assert "0.28.0 and 0.29.1" in hit.message and "ImportError" in hit.message
    assert hit.evidence["lacks"] == ["transformers:is_trackio_available"]
    assert hit.fix.startswith("pip install 'transformers==4.56.2'")


def test_every_imported_name_there_is_a_warning_with_the_pin_as_its_fix():
    """TRL 0.21.0 requires transformers>=4.55.0; a ROCm run with transformers 4.54.1 trained
    1,784 steps: every name TRL 0.21.0 imports from transformers on GRPO's path is in 4.54.1."""
    (hit,) = _pkg004("0.21.0", "4.54.1")
    assert hit.severity.value == "warning"
    assert "pip check reports it" in hit.message and "is in transformers 4.54.1" in hit.message
    assert hit.fix.startswith("pip install 'transformers==4.55.2'") and hit.remedy is not None


def test_a_development_build_is_judged_by_the_scanned_releases_around_it():
    """EHR-R1 (set 14): TRL 0.22.0.dev0 with transformers 4.51.3 under its floor 4.55.0."""
    (hit,) = _pkg004("0.22.0.dev0", "4.51.3")
    assert hit.severity.value == "warning" and "0.21.0 and 0.22.2" in hit.message
    assert _judged(["0.21.0", "0.22.2", "0.23.1"], "0.22.0.dev0") == ["0.21.0", "0.22.2"]
    assert _judged(["0.21.0", "0.22.2"], "0.22.2") == ["0.22.2"]
    assert _judged(["0.21.0", "0.22.2"], "1.0.0") == []  # past the newest scanned: not covered


def test_a_pair_outside_the_data_keeps_the_error():
    """transformers 4.40.0 is older than the symbol history (4.46.1 on): no evidence either way."""
    (hit,) = _pkg004("0.21.0", "4.40.0")
    assert hit.severity.value == "error" and "calls APIs their older releases lack" in hit.message
    from envdoctor.knowledge import knowledge

    assert api_verdict(knowledge(), "trl", "0.21.0", "transformers", "4.40.0") is None
    assert api_verdict(knowledge(), "vllm", "0.6.0", "transformers", "4.51.3") is None  # below the span


def test_the_neighbours_disagreeing_is_no_evidence():
    """0.19.0.dev0 beside transformers 4.49.0: both 0.18.2 and 0.19.1 import is_rich_available
    (transformers 4.50.0 on): an error; a release whose neighbours disagree keeps today's error."""
    from envdoctor.knowledge import knowledge

    verdict = api_verdict(knowledge(), "trl", "0.19.0.dev0", "transformers", "4.49.0")
    assert verdict is not None and verdict["lacks"] == ["transformers.utils:is_rich_available"]
    kb = knowledge()
    fake = {
        "scanned": {"transformers": ["4.49.0", "4.50.0"]},
        "importers": {
            "trl": {
                "0.1.0": {"transformers": {"names": 2}},
                "0.2.0": {"transformers": {"names": 2, "lacking": {"transformers:X": ["<=4.49.0"]}}},
            }
        },
    }
    saved = kb._tables.get("requirement_api")
    kb._tables["requirement_api"] = fake
    try:
        assert api_verdict(kb, "trl", "0.1.5", "transformers", "4.49.0") is None
        assert api_verdict(kb, "trl", "0.2.0", "transformers", "4.49.0") == {
            "lacks": ["transformers:X"],
            "judged": ["0.2.0"],
        }
        assert api_verdict(kb, "trl", "0.1.0", "transformers", "4.50.0")["names"] == 2  # type: ignore[index]
    finally:
        if saved is None:
            kb._tables.pop("requirement_api", None)
        else:
            kb._tables["requirement_api"] = saved


def test_the_fix_closure_clears_both_verdicts():
    for trl, transformers in (("0.29.0", "4.51.3"), ("0.21.0", "4.54.1")):
        facts = from_dict(snapshot(1, packages={**STACK, "trl": trl, "transformers": transformers}), "t")
        plan = build_plan(launch=None, config_dict=None, live=False)
        closure = close(facts, plan, Rerun())
        assert "PKG004" in closure.fixed
        assert not [f for f in closure.after if f.rule == "PKG004" or f.severity.value == "error"]


def test_the_data_is_read_only_for_an_unmet_floor():
    ctx = Context(
        facts=from_dict(snapshot(1, packages={**STACK, "trl": "0.21.0", "transformers": "4.55.2"}), "t"),
        plan=build_plan(launch=None, config_dict=None, live=False),
        kb=Knowledge(),
    )
    run_rules(ctx)
    assert "requirement_api" not in ctx.kb._tables


def test_an_attribute_read_at_import_or_in_the_config_constructor_is_evidence_too():
    """Not only the imports: what GRPO's modules read from an imported class when they load or
    build their config. TRL 0.21.0's GRPOConfig body reads `TrainingArguments._VALID_DICT_FIELDS`
    (transformers 4.51.0 on): with transformers 4.50.3 `from trl import GRPOTrainer` raises
    "type object 'TrainingArguments' has no attribute '_VALID_DICT_FIELDS'" (run, rv17d: the two
    wheels). TRL 1.7.1's GRPOConfig.__post_init__ reads `self.parallelism_config`, a
    TrainingArguments field since 4.56.0: with 4.55.4 GRPOConfig(...) raises AttributeError (run),
    while TRL 1.3.0 (which does not read it) trained two GRPO steps with 4.55.4 (run): a warning."""
    (hit,) = _pkg004("0.21.0", "4.50.3")
    assert hit.severity.value == "error" and "`TrainingArguments._VALID_DICT_FIELDS`" in hit.message
    (hit,) = [f for f in _pkg004("1.7.1", "4.55.4") if "requires transformers" in f.message]
    assert hit.severity.value == "error" and "`TrainingArguments.parallelism_config`" in hit.message
    (hit,) = [f for f in _pkg004("1.3.0", "4.55.4") if "requires transformers" in f.message]
    assert hit.severity.value == "warning"
    (hit,) = _pkg004("0.19.1", "4.50.3")  # its read is under `if transformers >= 4.51`: trained (run)
    assert hit.severity.value == "warning"


# vLLM's declared floor on transformers, judged the same way (vfloors18): the names the modules
# `import vllm`, `vllm.LLM` and the engine's start load import from transformers at module level.
VLLM_STACK = {
    "trl": "0.21.0",
    "torch": "2.10.0",
    "accelerate": "1.10.0",
    "datasets": "3.6.0",
    "vllm": "0.19.1",
}


def _vllm_pkg004(transformers: str, **more: str) -> list:
    snap = snapshot(1, packages={**VLLM_STACK, "transformers": transformers, **more})
    got = findings(snap, config={"use_vllm": True})
    return [f for f in got if f.rule == "PKG004" and f.message.startswith("vllm")]


def test_a_transformers_below_vllms_floor_lacking_a_name_vllm_imports_is_an_error_naming_it():
    """vLLM 0.19.1 (transformers>=4.56.0) beside transformers 4.51.3: its
    vllm/transformers_utils/processor.py, loaded by `vllm.LLM`'s import, does `from transformers
    import AutoVideoProcessor` and `from transformers.video_utils import VideoInput` at module
    level (transformers 4.52.0 on): ImportError before the engine starts."""
    (hit,) = _vllm_pkg004("4.51.3")
    assert hit.severity.value == "error"
    assert "`from transformers import AutoVideoProcessor`" in hit.message
    assert "on its import and engine start" in hit.message and "vllm 0.19.1" in hit.message
    assert "GRPOTrainer" not in hit.message
    assert "transformers.video_utils:VideoInput" in hit.evidence["lacks"]
    assert "'transformers==4.56.2'" in hit.fix  # the plan's fix (it also answers this stack's KNF001)


def test_a_transformers_below_vllms_floor_with_every_name_is_a_warning():
    """dc_ops_training (set 16, healthy): vLLM 0.19.1 with transformers 4.54.1 on ROCm trained
    1,784 steps; every name vLLM 0.19.1's import and engine start take from transformers is in
    4.54.1. The pin stays the fix (a warning, as for TRL's floors)."""
    (hit,) = _vllm_pkg004("4.54.1")
    assert hit.severity.value == "warning"
    assert "pip check reports it" in hit.message and "is in transformers 4.54.1" in hit.message
    assert "`import vllm`, `vllm.LLM` and the engine's start" in hit.message
    assert hit.remedy is not None


def test_vllms_exact_torch_pin_stays_an_error():
    """A compiled extension: vLLM 0.19.1's ops are built against torch 2.10.0's ABI."""
    hits = _vllm_pkg004("4.54.1", torch="2.9.0")
    (torch,) = [f for f in hits if "requires torch" in f.message]
    assert torch.severity.value == "error" and "undefined symbol" in torch.message


def test_a_name_only_in_a_history_gap_is_no_evidence():
    """transformers 4.52.x exports its model configs lazily (define_import_structure) and the
    symbol history misses `DeepseekV3Config` there, though `from transformers import
    DeepseekV3Config` works in 4.52.4 (run): the derive leaves such a gap out, so vLLM 0.11.2's
    floor beside 4.52.4 is judged on the other names (all there: a warning)."""
    from envdoctor.knowledge import knowledge

    row = knowledge().requirement_api["importers"]["vllm"]["0.11.2"]["transformers"]
    assert row["lacking"]["transformers:DeepseekV3Config"] == [">=4.46.1,<=4.50.3"]  # not 4.52.x
    verdict = api_verdict(knowledge(), "vllm", "0.11.2", "transformers", "4.52.4")
    assert verdict is not None and verdict["lacks"] == []


def test_vllm_026_below_its_floor_on_transformers_4_lacks_the_v5_tokenizer_backends():
    """vLLM 0.26.0 (transformers>=5.5.3): vllm/tokenizers/hf.py does `from transformers import
    AutoTokenizer, PythonBackend, TokenizersBackend` (transformers 5 names); with 4.57.6 it cannot
    be imported. A name the history does not know (MistralCommonBackend, exported lazily) does
    not hide a known missing one, but leaves "all there" unproved (5.5.0: no verdict)."""
    from envdoctor.knowledge import knowledge

    verdict = api_verdict(knowledge(), "vllm", "0.26.0", "transformers", "4.57.6")
    assert verdict is not None and "transformers:TokenizersBackend" in verdict["lacks"]
    assert api_verdict(knowledge(), "vllm", "0.26.0", "transformers", "5.5.0") is None


def test_the_fix_closure_clears_vllms_floor_in_one_round():
    """The error and the warning keep the pin as their fix: `envdoctor fix`'s one merged change
    leaves no PKG004 and no error (this stack's KNF001, TRL 0.21 beside vLLM >= 0.12, goes with it)."""
    for transformers in ("4.51.3", "4.54.1"):
        packages = {**VLLM_STACK, "transformers": transformers}
        facts = from_dict(snapshot(1, packages=packages), "t")
        plan = build_plan(launch=None, config_dict={"use_vllm": True}, live=False)
        closure = close(facts, plan, Rerun())
        assert any(f.rule == "PKG004" and f.message.startswith("vllm") for f in closure.before)
        assert closure.one_round and closure.changes.packages.get("transformers")
        assert not [f for f in closure.after if f.rule == "PKG004" or f.severity.value == "error"]


def test_a_release_between_two_scanned_ones_names_what_both_lack():
    """swe_smith_grpo (set 16): vLLM 0.14 (0.13.0 and 0.14.1 judge it) beside transformers 4.49.0.
    Both lack names there; the error names those both import (not 0.13.0's ALLOWED_LAYER_TYPES,
    which 0.14.1 no longer imports)."""
    from envdoctor.knowledge import knowledge

    verdict = api_verdict(knowledge(), "vllm", "0.14", "transformers", "4.49.0")
    assert verdict is not None and verdict["judged"] == ["0.13.0", "0.14.1"]
    assert "transformers:AutoVideoProcessor" in verdict["lacks"]
    assert "transformers.configuration_utils:ALLOWED_LAYER_TYPES" not in verdict["lacks"]


def test_vllm_that_refuses_transformers_4_at_import_is_an_error_whatever_names_it_has():
    """vLLM 0.24.0 (transformers>=5.5.3): vllm/transformers_utils/config.py, loaded by `import
    vllm`, raises ImportError at import where transformers < 5.0.0 ("Support for Transformers v4
    is deprecated and was removed in vLLM v0.24.0"); transformers 4.57.6 has every name it imports,
    so the names alone would say a warning."""
    snap = snapshot(1, packages={**VLLM_STACK, "vllm": "0.24.0", "torch": "2.11.0", "transformers": "4.57.6"})
    got = findings(snap, config={"use_vllm": True})
    (hit,) = [
        f for f in got if f.rule == "PKG004" and f.message.startswith("vllm") and "transformers" in f.message
    ]
    assert hit.severity.value == "error"
    assert (
        "`import vllm.transformers_utils.config` raises ImportError where transformers<5.0.0" in hit.message
    )
