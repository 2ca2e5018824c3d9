"""Real failure logs from public threads (tests/triage/real/*.yaml): what triage must say on each.

Each file holds the thread's URL, whether the thread settled the cause, the cause and fix in our
words, the quoted log excerpt, optionally the facts / config / launch line the thread shows, and
``expect``: the rule of the first finding (``null``: no diagnosis at all), phrases its message and
fix must hold (``says``, ``fix_says``) or must not (``not_says``, ``fix_not``), and ``only`` when it
must be the only finding. A thread that did not settle the cause may be diagnosed only from what
its own log says, never with a cause the thread does not show.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envdoctor.triage.signatures import signatures
from tests.conftest import A100_40, H100, snapshot
from tests.triage.helpers import findings, judge, scan_bytes

REAL = Path(__file__).resolve().parent / "real"
CASES = sorted(REAL.glob("*.yaml"))
KEYS = {"source", "thread", "cause", "fix", "log", "expect", "facts", "config", "launch", "note"}
EXPECT = {"rule", "signature", "says", "fix_says", "not_says", "fix_not", "only"}
MODELS = {"A100_40": A100_40, "H100": H100}


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _context(case: dict):
    if not {"facts", "config", "launch"} & set(case):
        return None
    facts = case.get("facts", {})
    snap = snapshot(
        facts.get("gpus", 1), MODELS[facts.get("model", "H100")], packages=facts.get("packages", {})
    )
    return judge(snap, config=case.get("config"), launch=case.get("launch"))


def test_the_suite_is_large_and_well_formed():
    assert len(CASES) >= 40
    unresolved = 0
    for path in CASES:
        case = _load(path)
        assert set(case) <= KEYS and {"source", "thread", "cause", "fix", "log", "expect"} <= set(case), (
            path.name
        )
        assert case["source"].startswith("https://github.com/"), path.name
        assert case["thread"] in ("resolved", "unresolved"), path.name
        assert set(case["expect"]) <= EXPECT and "rule" in case["expect"], path.name
        unresolved += case["thread"] == "unresolved"
    assert unresolved >= 10  # threads without a settled cause are kept, and get no invented one


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_log(path):
    case = _load(path)
    expect = case["expect"]
    result = scan_bytes(case["log"])
    found = findings(result, _context(case))
    if expect["rule"] is None:
        assert found == [], [f.message for f in found]
        return
    assert found, "no finding"
    first = found[0]
    assert first.rule == expect["rule"], (first.rule, first.message)
    if expect.get("only") or expect["rule"] == "TRI003":
        assert len(found) == 1, [f.rule for f in found]
    if "signature" in expect:
        assert first.evidence["signature"] == expect["signature"]
    text = f"{first.message}\n{first.fix}"
    for phrase in expect.get("says", []):
        assert phrase in first.message, (phrase, first.message)
    for phrase in expect.get("fix_says", []):
        assert phrase in first.fix, (phrase, first.fix)
    for phrase in expect.get("not_says", []):
        assert phrase not in text, (phrase, text)
    for phrase in expect.get("fix_not", []):
        assert phrase not in first.fix, (phrase, first.fix)


def test_every_new_failure_class_is_shown_by_a_real_log():
    shown = set()
    for path in CASES:
        result = scan_bytes(_load(path)["log"])
        shown |= {m.signature.id for m in result.matches}
    classes = {
        "vllm-server-not-up",
        "vllm-server-refused",
        "vllm-server-not-trl",
        "extension-abi-mismatch",
        "api-drift-import",
        "call-signature",
        "nccl-duplicate-gpu",
        "dataparallel-replica",
        "cuda-error-under-cap",
        "vllm-device-unavailable",
        "cuda-oom",
        "device-mismatch",
        "vllm-free-memory-below-utilization",
    }
    assert classes <= shown
    assert classes <= {s.id for s in signatures()}
