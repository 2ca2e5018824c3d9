"""Secrets in the lines triage quotes (issue 37): a token cut where a quote, a title, a body or
a context line is shortened was shown in part (``hf_CANARYhfa1B2c3D…``: the cut came before the
redaction, and what was left was too short to look like a token); ``password X`` in prose was
shown. Every path: text, JSON, ``-v``, the issue draft."""

from __future__ import annotations

import pytest

from envdoctor import redact
from tests.hostile.test_hostile_inputs import cli

HF = "hf_CANARYhfa1B2c3D4e5F6g7H8i9J0k1L2m3N4"
HEAD = 'step 1\nTraceback (most recent call last):\n  File "t.py", line 1, in <module>\n'


def _leaks(text: str) -> list[str]:
    return [word for word in ("CANARY", "hfa1B2", "PWCANARY", "hunter") if word in text]


#: where the token starts in its line: just before each place a quoted line is cut
#: (the draft's title at 120, a finding's quote at 300, the draft's body at 500)
OFFSETS = (105, 115, 290, 296, 488, 496)


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("args", [("--format", "json"), ("-v", "--format", "json"), ("-v",)])
def test_a_token_at_a_cut_is_never_shown_in_part(tmp_path, offset, args):
    prefix = "ValueError: could not log in "
    line = prefix + "x" * (offset - len(prefix) - len("with token ")) + f"with token {HF}"
    assert line.index(HF) == offset
    (tmp_path / "t.log").write_text(HEAD + line + " at https://bob:PWCANARY@hub.example\n")
    proc = cli(tmp_path, "triage", "t.log", *args)
    assert not _leaks(proc.stdout + proc.stderr), proc.stdout


@pytest.mark.parametrize("offset", (985, 995))
def test_a_token_at_the_cut_of_a_context_line(tmp_path, offset):
    context = "x" * (offset - 1) + " " + HF + " done"
    log = f"step 1\n{context}\n" + HEAD + "ValueError: boom\n"
    (tmp_path / "t.log").write_text(log)
    proc = cli(tmp_path, "triage", "t.log", "-v", "--format", "json")
    assert not _leaks(proc.stdout), proc.stdout


@pytest.mark.parametrize("args", [("--format", "json"), ("-v", "--format", "json"), ()])
def test_password_in_prose_on_a_matched_line(tmp_path, args):
    line = "RuntimeError: NCCL error in: x, unhandled cuda error password PWCANARY"
    (tmp_path / "t.log").write_text(HEAD + line + "\n")
    proc = cli(tmp_path, "triage", "t.log", *args)
    assert "TRI002" in proc.stdout and not _leaks(proc.stdout), proc.stdout


@pytest.mark.parametrize(
    "text, kept",
    [
        ("could not log in: password PWCANARY rejected", "rejected"),
        ("with password 'hunter2'", "with password"),
        ("password=hunter2", "password="),
        ("the PASSWORD Hunter22 expired", "expired"),
    ],
)
def test_a_password_in_prose_is_masked(text, kept):
    out = redact.redact(text)
    assert not _leaks(out) and kept in out and redact.MASK in out, out


@pytest.mark.parametrize(
    "text",
    [
        "FATAL: password authentication failed for user bob",
        "the password is wrong",
        "password protected archive",
        "enter a password.",
    ],
)
def test_ordinary_prose_about_passwords_is_kept(text):
    assert redact.redact(text) == text


@pytest.mark.parametrize("limit", range(100, 140, 3))
def test_cut_redacts_before_it_cuts(limit):
    text = "x" * 110 + " " + HF + " and password PWCANARY and more " * 3
    out = redact.cut(text, limit)
    assert not _leaks(out) and len(out) <= limit, out
    assert redact.cut("short", limit) == "short"
    assert redact.cut("x" * 5000, 300) == "x" * 299 + "…"  # no white space: still shown
