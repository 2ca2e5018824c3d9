"""Symptoms with backticks are matched without them everywhere: triage's
signatures as well as ``Symptom.found_in`` (the shipped catalogue)."""

from __future__ import annotations

from envdoctor.triage import catalogue
from tests.triage.helpers import findings, scan_bytes


def test_a_literal_symptom_with_backticks_is_recognised_by_triage_in_a_paste_that_lost_them() -> None:
    """The backticks are optional in triage's signature too, not only in ``Symptom.found_in``:
    TRL's refusal of sync_ref_model with PEFT, pasted from a rendered issue (the backticks gone),
    is the entry's, not the generic "TRL's own check refused" answer."""
    from envdoctor.knowledge.failures import Symptom

    log = (
        b"Traceback (most recent call last):\n"
        b'  File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 420, in __init__\n'
        b"    raise ValueError(\n"
        b"ValueError: You passed sync_ref_model=True while using a PEFT model, "
        b"which is currently not supported.\n"
    )
    got = findings(scan_bytes(log))
    assert [f.rule for f in got] == ["TRI011"], got
    assert "sync_ref_model" in got[0].message and "PEFT" in got[0].message
    symptom = Symptom("You passed `sync_ref_model=True` while using a PEFT model")
    assert symptom.found_in(log.decode())
    assert catalogue._symptom(symptom)[1].startswith(b"You passed")
