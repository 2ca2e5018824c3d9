"""The issue draft ``triage`` prints under a text report holds none of the plan's secrets
(issue: hostile input, round four). A value given after a secret-named option of the launch
line (``--hf_token X``) is masked wherever it stands in the report, but the draft pasted below
the text report was taken from the findings before their redaction and had only ``emit``'s
pass, which does not know the plan: ``ValueError: login failed for X`` showed X three times."""

from __future__ import annotations

from tests.hostile.test_hostile_inputs import cli

SECRET = "CANARYknownval1"
LOG = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train.py", line 10, in <module>\n'
    "    main()\n"
    f"ValueError: login failed for {SECRET} at hub\n"
)


def test_the_issue_draft_masks_the_plans_secrets(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(LOG)
    launch = f"python train.py --hf_token {SECRET}"
    for args in (("-v",), (), ("--format", "json", "-o", str(tmp_path / "r.json"))):
        proc = cli(tmp_path, "triage", *args, "--launch", launch, str(log))
        assert "An issue draft to paste" in proc.stdout, proc.stdout
        assert SECRET not in proc.stdout + proc.stderr, args
        assert "ValueError: login failed for **** at hub" in proc.stdout
    assert SECRET not in (tmp_path / "r.json").read_text()
