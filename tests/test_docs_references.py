"""Every `pytest path::test` that the docs give as a reproduce command names a real test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the held-out sets' folders hold other projects' files verbatim (their READMEs name their own tests)
DOCS = sorted(
    [
        ROOT / "README.md",
        *(
            p
            for p in (ROOT / "docs").rglob("*.md")
            if not any(part.startswith("heldout-") for part in p.relative_to(ROOT / "docs").parts[:-1])
        ),
    ]
)
REF = re.compile(r"\b(tests/[\w/]+\.py)(?:::(\w+))?")


def _tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_referenced_tests_exist(doc):
    missing = []
    for path, name in REF.findall(doc.read_text()):
        file = ROOT / path
        if not file.exists():
            missing.append(path)
        elif name and name not in _tests(file):
            missing.append(f"{path}::{name}")
    assert not missing, f"{doc.name} names tests that do not exist: {missing}"
