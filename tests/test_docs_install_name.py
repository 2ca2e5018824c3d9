"""Every ``pip install`` of envdoctor in the README and docs names the distribution pip knows:
``grpo-envdoctor`` (the package index refuses ``envdoctor``; pip refuses a direct reference whose
name differs from the project's metadata)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PIP = re.compile(r"pip install ([^`\n]+)")


def _requirements(line: str) -> list[str]:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    out = []
    for w in words:
        if w in ("&&", "||", ";", "|") or w.endswith(";"):
            break  # the next command
        if not w.startswith("-") and w != ".":
            out.append(w)
    return out


def envdoctor_installs() -> list[tuple[str, str]]:
    """(where, requirement) for each requirement in a pip line that installs envdoctor."""
    found = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in PIP.finditer(line):
                for word in _requirements(m.group(1)):
                    if "envdoctor" in word.lower():
                        found.append((f"{doc.relative_to(ROOT)}:{n}", word))
    return found


def test_every_documented_install_names_the_distribution():
    installs = envdoctor_installs()
    assert installs, "no pip install of envdoctor found in the docs"
    wrong = []
    for where, word in installs:
        try:
            name = Requirement(word).name
        except InvalidRequirement:
            continue  # a path or a placeholder, not a requirement
        if name.lower().startswith("envdoctor"):
            wrong.append(f"{where}: {word}")
    assert not wrong, "pip refuses these (the distribution is grpo-envdoctor): " + "; ".join(wrong)


def test_the_distribution_name_is_the_projects():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^name = "grpo-envdoctor"', text, re.M)


def test_the_probe_extra_is_documented():
    """The probe needs the training stack: the README and the docs name the extra that has it."""
    extra = "pip install 'grpo-envdoctor[probe]'"
    assert extra in (ROOT / "README.md").read_text(encoding="utf-8")
    assert any(extra in d.read_text(encoding="utf-8") for d in DOCS[1:])
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^probe = \[", text, re.M)
