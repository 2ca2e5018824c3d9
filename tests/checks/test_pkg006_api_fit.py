"""PKG006 for a vLLM newer than the TRL line's range: TRL's ceiling is the newest vLLM its
release was tested with; where the vLLM is of the next minor line and every vLLM API the TRL
release calls on GRPO's path is in that wheel (rules/knowledge/vllm_api.yaml, read from both
wheels by scripts/refresh_knowledge.py), the finding is advice (info), not a likely break.
Issue 35: two published runs (TRL 1.0.0 on a vLLM 0.18.2 nightly, TRL 1.2.0 on vLLM 0.19.1)
trained."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot


def _pkg006(trl: str, vllm: str):
    snap = snapshot(2, packages={"trl": trl, "vllm": vllm})
    found = findings(snap, config={"use_vllm": True, "vllm_mode": "server"})
    return [f for f in found if f.rule == "PKG006"], [f for f in found if f.rule == "KNF001"]


@pytest.mark.parametrize(
    ("trl", "vllm", "judged"),
    [("1.2.0", "0.19.1", "0.19.1"), ("1.0.0", "0.18.2rc1.dev73", "0.18.1 and 0.19.0")],
)
def test_the_next_vllm_line_with_every_api_present_is_advice(trl, vllm, judged):
    (f,), _ = _pkg006(trl, vllm)
    assert f.severity.value == "info"
    assert f"is present in vLLM {judged}" in f.message and "not a known break" in f.message


def test_a_break_the_api_scan_found_keeps_the_warning(monkeypatch):
    from envdoctor.knowledge import knowledge

    api = dict(knowledge().vllm_api)
    gone = {
        "kind": "import",
        "api": "vllm.x:Y",
        "on_grpo_path": True,
        "trl": ">=1.2.0,<1.3.0",
        "vllm": [">=0.19.0"],
    }
    monkeypatch.setitem(knowledge()._tables, "vllm_api", {**api, "breaks": [*api["breaks"], gone]})
    (f,), _ = _pkg006("1.2.0", "0.19.1")
    assert f.severity.value == "warning" and "is present" not in f.message
    # a break off GRPO's path (trl/experimental) does not count
    monkeypatch.setitem(
        knowledge()._tables, "vllm_api", {**api, "breaks": [*api["breaks"], {**gone, "on_grpo_path": False}]}
    )
    (f,), _ = _pkg006("1.2.0", "0.19.1")
    assert f.severity.value == "info"


def test_a_break_the_catalogue_tells_is_its_error_not_advice():
    pkg006, knf = _pkg006("0.26.0", "0.12.0")  # GuidedDecodingParams, huggingface/trl#4617
    assert pkg006 == [] and any(f.severity.value == "error" for f in knf)


def test_two_lines_past_the_ceiling_or_below_the_range_stays_a_warning():
    (f,), _ = _pkg006("1.2.0", "0.28.0")  # the API is there, ten lines of behaviour are not tested
    assert f.severity.value == "warning"
    (f,), _ = _pkg006("0.25.0", "0.10.0")  # below TRL's pin: its minimum stands
    assert f.severity.value == "warning"


def test_a_known_break_of_the_next_line_is_the_catalogues_error():
    pkg006, knf = _pkg006("1.12.0", "0.28.0")  # huggingface/trl#7001
    assert pkg006 == [] and knf and knf[0].severity.value == "error"
