"""Redacting text that was redacted and escaped already leaves it as it is (issue: hostile
input, round four). The text report escapes a newline inside a value as ``\\n`` and ``emit``
then redacts everything once more: a masked value followed by an escaped newline
(``HF_TOKEN=****\\nexport A=1``, ``OPENAI_API_KEY="****"\\nAWS_…``) was read as one longer value
and masked again, eating the words after it (a triage issue draft lost ``export``, whole
lines and the error line itself). ``redact._value_span`` now leaves a value an earlier pass
masked."""

from __future__ import annotations

import pytest

from envdoctor.redact import escape_controls, redact
from tests.hostile.test_hostile_inputs import cli

FORMS = [
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz01234567", "hf_abcdefghijklmnopqrstuvwxyz01234567"),
    ('export OPENAI_API_KEY="sk-proj-abcdefghijklmnopqrstuvwx"', "sk-proj-abcdefghijklmnopqrstuvwx"),
    ("password hunter2x9q", "hunter2x9q"),
    ("API_KEY: abc123456789", "abc123456789"),
    ("mysql -u x -pSECRET1xyz", "SECRET1xyz"),
    ("--hub_token 'ab cd ef gh'", "ab cd ef gh"),
    ("Authorization: Bearer abcdefgh123456", "abcdefgh123456"),
]


@pytest.mark.parametrize(("line", "secret"), FORMS)
def test_redacting_twice_changes_nothing_and_keeps_the_next_line(line, secret):
    once = escape_controls(redact(f"{line}\nexport MARKER=1 and more"), newlines=True)
    assert secret not in once and "\\nexport MARKER=1 and more" in once, once
    assert redact(once) == once


def test_a_triage_issue_draft_keeps_the_lines_after_a_masked_value(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz01234567\n"
        'export OPENAI_API_KEY="sk-proj-abcdefghijklmnopqrstuvwx"\n'
        "export MARKERWORD=1\n"
        "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\n"
        "requests.exceptions.HTTPError: 401 Client Error for url https://huggingface.co/api/x\n"
    )
    proc = cli(tmp_path, "triage", "-v", str(log))
    draft = proc.stdout.split("issue_draft:", 1)[1].split("· file:", 1)[0]
    flat = " ".join(part.strip().lstrip("·").strip() for part in draft.splitlines())
    for kept in (
        "HF_TOKEN=****\\nexport",
        'OPENAI_API_KEY="****"\\nexport MARKERWORD',
        "WANDB_API_KEY=****\\nrequests",
    ):
        assert kept in flat, flat
    assert "hf_abcdefghij" not in proc.stdout and "sk-proj-abc" not in proc.stdout


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ('PASSWORD="****"hunter2xyz', "hunter2xyz"),  # one shell word: the quoted mask, then the rest
        ("PASSWORD='****'hunter2xyz more", "hunter2xyz"),
        ("PASSWORD=\"****\"'hunter2xyz'", "hunter2xyz"),
        ('api_key: "****"xyzsecret123', "xyzsecret123"),
        ("API_KEY=****\\hunter2xyz", "hunter2xyz"),
    ],
)
def test_a_value_that_goes_on_after_a_mask_is_still_masked(line, secret):
    """The guard leaves a mask that stands whole (ended by white space, the line's end, a
    delimiter or a report's escape); a secret glued after a literal ``****`` is masked."""
    assert secret not in redact(line), redact(line)
