"""The README reads top-down as a user's page: what it is, set up (install + check, and the test
command), the 30-second example soon after, the four ways, what it checks, where things are; CI
internals and the speed history live in docs/contributing.md and docs/speed.md."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _line(text: str) -> int:
    return README[: README.index(text)].count("\n") + 1


def test_sections_in_a_users_order():
    heads = [line for line in README.splitlines() if line.startswith("## ")]
    assert heads[:3] == ["## Set up (fresh machine)", "## 30 seconds", "## Four ways to run it"]
    assert heads.index("## What it checks") < heads.index("## Where things are")


def test_the_first_example_comes_soon_after_the_first_command():
    first_command = _line("pip install -e . && envdoctor check")
    first_example = _line("```console")
    assert first_example - first_command < 45, (first_command, first_example)
    assert _line("bash .ci/run") < first_example  # the test command stays in Set up


def test_ci_internals_and_speed_history_moved_to_docs():
    for internal in ("ci-constraints", "refresh-ci-constraints", "ENVDOCTOR_CI_WORKERS", "load average"):
        assert internal not in README, internal
    contributing = (ROOT / "docs/contributing.md").read_text(encoding="utf-8")
    speed = (ROOT / "docs/speed.md").read_text(encoding="utf-8")
    assert "bash .ci/run" in contributing and "ci-constraints" in contributing and "mypy" in contributing
    assert "bench/check_speed.py" in speed and "median wall" in speed
    assert "docs/contributing.md" in README and "docs/speed.md" in README
