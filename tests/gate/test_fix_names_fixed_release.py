"""KNF001 names the release its fix asks (it printed "fixed in trl 0.18.0" with the fix
`trl>=0.20.0` and no word of why)."""

from __future__ import annotations

import re

from envdoctor.checks.known_failures import _fix_asks
from envdoctor.knowledge import known_failures


def test_a_fix_that_asks_a_later_release_than_fixed_in_is_said_in_the_message():
    checked = 0
    for failure in known_failures():
        for name, fixed in failure.fixed_in.items():
            for want in re.findall(rf"\b{re.escape(name)}\s*>=\s*([\w.]+)", failure.fix.split("#")[0]):
                checked += 1
                said = _fix_asks(failure)
                assert (f"{name}>={want}" in said) == (want != str(fixed)), (failure.id, said)
    assert checked > 10


def test_the_fsdp_entry_says_why_it_asks_0_20():
    (entry,) = [f for f in known_failures() if f.id == "trl-grpo-fsdp-before-0.18"]
    said = _fix_asks(entry)
    assert said.startswith("; the fix asks trl>=0.20.0")
