"""A known failure's fix for a run whose release is older than the one the fix needs (older_fix,
envdoctor/triage/olderfix.py): peft's target_modules="all-linear" arrived in peft 0.8.0, so a run
on an older peft (its version, its message's wording, its log's date) gets the model's own names
first (set 23's e009 / e010, 2023 runs); a newer or unknown, undated run keeps the entry's fix."""

from __future__ import annotations

import pytest

from envdoctor.knowledge.failures import KnownFailuresError, parse_entry
from envdoctor.triage.olderfix import latest_date
from tests.triage.helpers import findings, scan_bytes

SET = (
    "ValueError: Target modules {'q_proj', 'v_proj'} not found in the base model. Please check the "
    "target modules and try again.\n"
)
LIST = SET.replace("{'q_proj', 'v_proj'}", "['q_proj', 'v_proj']")


def _fix(log: str) -> str:
    (f,) = [
        f
        for f in findings(scan_bytes(log))
        if f.evidence.get("known_failure") == "peft-target-modules-not-in-model"
    ]
    return f.fix


def _names_first(fix: str) -> bool:
    return fix.startswith("set target_modules to names the loaded model has") and "needs peft 0.8.0" in fix


def test_a_list_in_the_message_dates_a_peft_before_the_shorthand():
    assert _names_first(_fix(LIST))  # e009 / e010: peft before 0.6.0 prints the list as given


def test_the_logs_peft_below_080_gets_the_names_first():
    assert _names_first(_fix("peft==0.7.1\n" + SET))


def test_the_logs_peft_from_080_keeps_all_linear_first():
    assert _fix("peft==0.10.0\n" + SET).startswith('set target_modules="all-linear"')


def test_a_log_dated_before_peft_080_gets_the_names_first():
    dated = "2023-09-01 10:11:12 - INFO - loading model\n"
    assert _names_first(_fix(dated + SET))
    later = "2024-05-02 10:11:12 - INFO - loading model\n"
    assert _fix(later + SET).startswith('set target_modules="all-linear"')


def test_unknown_and_undated_keeps_the_entrys_fix():
    assert _fix(SET).startswith('set target_modules="all-linear"')


def test_latest_date_reads_iso_and_transformers_timestamps():
    assert latest_date(b"[2023-06-17 09:00:01] a\n08/31/2023 12:00:00 - INFO - b\n") == "2023-08-31"
    assert latest_date(b"no date here, 2023-06-17 alone\n") == ""


def test_a_malformed_older_fix_is_a_schema_error():
    entry = {
        "id": "x-entry",
        "title": "t",
        "kind": "crash",
        "depends_on": "run",
        "triage_only": True,
        "note": "n",
        "when": {"packages": {"peft": ">=0.3.0"}},
        "symptoms": ["some words"],
        "cause": "c",
        "fix": "f",
        "sources": ["https://example.org"],
        "older_fix": {"package": "peft", "fix": "g"},
    }
    with pytest.raises(KnownFailuresError, match="older_fix"):
        parse_entry(entry, "test")
    entry["older_fix"] = {"package": "peft", "below": "0.8.0", "released": "Jan 2024", "fix": "g"}
    with pytest.raises(KnownFailuresError, match="released"):
        parse_entry(entry, "test")
