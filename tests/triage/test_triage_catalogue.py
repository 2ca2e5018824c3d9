"""Triage matches the known-failures catalogue (envdoctor/triage/catalogue.py): an entry's symptom
on a line gives its cause and fix, confirmed by the log's versions (a catalogue of test entries
here, so that the tests do not depend on the shipped one)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from envdoctor.findings import Severity
from envdoctor.triage import catalogue, signatures
from tests.triage.helpers import findings, scan_bytes


def _entry(eid, symptoms, packages, certainty="certain", kind="crash"):
    syms = tuple(
        SimpleNamespace(text=s, regex=re.compile(s[3:]) if s.startswith("re:") else None) for s in symptoms
    )
    return SimpleNamespace(
        id=eid,
        title=f"title of {eid}",
        kind=kind,
        certainty=certainty,
        packages=packages,
        symptoms=syms,
        cause=f"cause of {eid}",
        fix=f"fix of {eid}",
        fixed_in={"trl": "0.20.0"},
        sources=("https://github.com/x/y/issues/1",),
        severity="error" if certainty == "certain" else "warning",
    )


ENTRIES = [
    _entry(
        "weight-sync-stall", ["init_weight_transfer_engine stalled"], {"trl": ">=0.16.0,<0.20.0"}, kind="hang"
    ),
    _entry("an-exception", ["cannot load the weight transfer engine"], {"trl": ">=0.16.0"}),
    _entry("short-one", ["gather"], {"vllm": ">=0.8"}),
    _entry("nested", ["re:(a+)+b"], {"vllm": ">=0.8"}),
    _entry("on-an-own-line", ["Duplicate GPU detected"], {"trl": ">=0.16.0"}),
    _entry(
        "silently-wrong",
        ["generate patch may have failed"],
        {"trl": ">=1.10.0"},
        certainty="depends",
        kind="silent-wrong",
    ),
]


@pytest.fixture(autouse=True)
def fake_catalogue(monkeypatch):
    monkeypatch.setattr(catalogue, "_entries", lambda: list(ENTRIES))
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    yield
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()


def test_rare_literals_become_anchors_short_ones_wait_for_error_and_nested_regexes_are_left_out():
    sigs, skipped, _ = catalogue.catalogue()
    assert b"init_weight_transfer_engine stalled" in signatures.anchors()  # a line of its own
    assert b"cannot load the weight transfer engine" not in signatures.anchors()  # an exception's
    assert b"gather" not in signatures.anchors()
    short = next(s for s in signatures.signatures() if s.id == "known-short-one")
    assert short.keywords == (b"Error",)
    assert skipped == ("nested: re:(a+)+b",) and "known-nested" not in {s.id for s in sigs}


def test_a_symptom_with_the_logs_versions_in_range_is_a_confirmed_error():
    f = findings(scan_bytes("- TRL version: 0.17.0\ninit_weight_transfer_engine stalled\n"))[0]
    assert f.rule == "TRI011" and f.severity == Severity.ERROR
    assert "cause of weight-sync-stall" in f.message
    assert "the log's versions match: trl 0.17.0 (>=0.16.0,<0.20.0)" in f.message
    assert f.fix == "fix of weight-sync-stall (fixed in trl 0.20.0)"


def test_without_versions_it_is_a_warning_that_says_so():
    f = findings(scan_bytes("init_weight_transfer_engine stalled\n"))[0]
    assert f.rule == "TRI011" and f.severity == Severity.WARNING
    assert "the log shows no versions of trl >=0.16.0,<0.20.0" in f.message


def test_a_silently_wrong_runs_one_warning_line_is_found_without_error_on_it():
    """A silent-wrong failure raises nothing: its symptom is a warning of its own (no "Error")."""
    assert b"generate patch may have failed" in signatures.anchors()
    f = findings(
        scan_bytes(
            "trl==1.10.0\nUnsloth: Warning - regex did not match, VLLMGeneration."
            "generate patch may have failed\n"
        )
    )[0]
    assert f.rule == "TRI011" and "silently-wrong" in f.message


def test_versions_outside_the_range_make_no_diagnosis():
    found = findings(scan_bytes("- TRL version: 0.25.0\ninit_weight_transfer_engine stalled\n"))
    assert all(f.rule != "TRI011" for f in found)


def test_a_short_symptom_is_matched_on_a_line_with_error_only():
    assert findings(scan_bytes("vllm==0.9.1\nall gather done\n")) == []
    f = findings(scan_bytes("vllm==0.9.1\nRuntimeError: all gather failed\n"))[0]
    assert f.rule == "TRI011" and "short-one" in f.message


def test_an_own_signature_keeps_its_line():
    found = findings(
        scan_bytes(
            "- TRL version: 0.17.0\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device 40\n"
        )
    )
    assert [f.rule for f in found] == ["TRI006"]


def test_an_exception_message_symptom_is_found_on_its_error_line():
    f = findings(scan_bytes("- TRL version: 0.17.0\nRuntimeError: cannot load the weight transfer engine\n"))[
        0
    ]
    assert f.rule == "TRI011" and "an-exception" in f.message


def test_a_line_an_own_signature_rejected_goes_to_the_catalogue_when_the_versions_confirm():
    ENTRIES.append(_entry("attr", ["object has no attribute 'warnings_issued'"], {"transformers": ">=5.1"}))
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    try:
        line = "AttributeError: 'GRPOTrainer' object has no attribute 'warnings_issued'\n"
        # without versions: the entry, as a warning (it depends on a release the log does not show)
        f = findings(scan_bytes(line))[0]
        assert f.rule == "TRI011" and f.severity == Severity.WARNING and "shows no versions" in f.message
        f = findings(scan_bytes("transformers==5.1.0\n" + line))[0]
        assert f.rule == "TRI011" and "the log's versions match: transformers 5.1.0" in f.message
        assert f.severity == Severity.ERROR
        assert findings(scan_bytes("transformers==5.0.0\n" + line))[0].rule != "TRI011"  # outside
    finally:
        ENTRIES.pop()


def test_a_rejected_line_goes_to_an_entry_about_the_users_config_without_versions():
    """A config key a TRL release removed (an entry left to CFG001) names the failure itself: no
    versions needed, a warning. A release pairing on such a line still needs them (the test above)."""
    old_key = _entry("old-key", ["unexpected keyword argument 'max_prompt_length'"], {"trl": ">=0.28.0"})
    old_key.rule = "CFG001"
    ENTRIES.append(old_key)
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    try:
        line = "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'max_prompt_length'\n"
        f = findings(scan_bytes(line))[0]
        assert f.rule == "TRI011" and f.severity == Severity.WARNING
        assert "cause of old-key" in f.message and "the log shows no versions" in f.message
        assert findings(scan_bytes("trl==0.27.0\n" + line))[0].rule == "TRI003"  # outside its range
    finally:
        ENTRIES.pop()


def test_without_versions_a_general_entry_wins_over_one_about_a_single_release():
    """One symptom, two entries: the one about a TRL release range is a guess where the log shows no
    TRL version (a verl or Unsloth log); the general one is said. The release's versions confirm
    the specific entry."""
    ENTRIES.extend(
        [
            _entry(
                "one-release",
                ["prompt is longer than the model length"],
                {"trl": ">=0.18.0,<0.19.0"},
                certainty="depends",
            ),
            _entry(
                "any-release",
                ["prompt is longer than the model length"],
                {"vllm": ">=0.7.2"},
                certainty="depends",
            ),
        ]
    )
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    try:
        line = "ValueError: prompt is longer than the model length\n"
        assert "any-release" in findings(scan_bytes(line))[0].message
        assert "one-release" in findings(scan_bytes("trl==0.18.0\n" + line))[0].message
    finally:
        del ENTRIES[-2:]


def test_a_silently_wrong_runs_warning_is_found_on_its_own_line():
    ENTRIES.append(
        _entry(
            "ignored-prompt",
            ["tokens) is too long and exceeds limit of"],
            {"vllm": ">=0.6.0,<0.11.0"},
            certainty="depends",
            kind="silent-wrong",
        )
    )
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    try:
        line = (
            "WARNING 05-16 10:48:52 scheduler.py:947] Input prompt (48173 tokens) is too long and "
            "exceeds limit of 32768\n"
        )
        assert "ignored-prompt" in findings(scan_bytes(line))[0].message
    finally:
        ENTRIES.pop()


def test_a_release_in_an_open_range_is_no_evidence_for_an_uncertain_entry(tmp_path):
    """`vllm-model-architecture-not-supported` holds for vllm >=0.2.0 and depends on the model:
    a log showing vLLM 0.7.3 falls in that range whatever the cause (an outdated checkpoint gives
    the same "failed to be inspected"), so it stays a warning; the range is no evidence."""
    import json

    from tests.conftest import run_cli

    log = tmp_path / "run.log"
    log.write_text(
        "ValueError: Model architectures ['Qwen2_5_VLForConditionalGeneration'] failed to be "
        "inspected. Please check the logs for more details.\n"
        "vllm                              0.7.3\n"
    )
    out = json.loads(run_cli("triage", "--format", "json", str(log)).stdout)
    assert [(f["rule"], f["severity"]) for f in out["findings"]] == [("TRI011", "warning")]


def test_a_symptom_with_backticks_matches_a_paste_that_lost_them_and_nothing_looser() -> None:
    """Python quotes names in backticks; a page's markup renders them as code and a copy loses
    them. A symptom (literal or regex) still matches; a character class keeps its backtick."""
    from envdoctor.knowledge.failures import Symptom

    literal = Symptom("`vllm_mode` is not a valid")
    assert literal.found_in("ValueError: `vllm_mode` is not a valid mode")
    assert literal.found_in("ValueError: vllm_mode is not a valid mode")
    assert not literal.found_in("ValueError: vllm_device is not a valid mode")
    regex = Symptom("re:has model type `[^`]{1,80}` but Transformers")
    assert regex.found_in("has model type `qwen3` but Transformers does not")
    assert regex.found_in("has model type qwen3 but Transformers does not")
    assert not regex.found_in("has model type qwen3 and Transformers does not")
