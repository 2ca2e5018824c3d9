"""The package page and the wheel (issue #27, item 10): a license file, project URLs without
placeholders, README links that work on the package index, `explain` references a wheel user
can open, examples that point only at files of the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.resources import REPOSITORY, repo_url

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
BLOB = f"{REPOSITORY}/blob/main/"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_license_file_is_the_apache_text_and_is_declared():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_project_urls_name_the_repository_without_placeholders():
    urls = PROJECT["urls"]
    assert set(urls) >= {"Homepage", "Documentation", "Issues"}
    for url in urls.values():
        assert url.startswith(REPOSITORY) and "<" not in url and "…" not in url


def _repo_file(url: str) -> Path:
    return ROOT / url[len(BLOB) :].split("#", 1)[0]


def test_readme_links_work_on_the_package_page():
    """The README is the package index page: a relative link is dead there."""
    links = LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert links
    relative = [u for u in links if not u.startswith(("https://", "http://", "#"))]
    assert relative == []
    dead = [u for u in links if u.startswith(BLOB) and not _repo_file(u).exists()]
    assert dead == []


def test_explain_references_are_urls_a_wheel_user_can_open():
    out = subprocess.run(
        [sys.executable, "-m", "envdoctor", "explain", "LAY003"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    refs = [line[4:] for line in out.stdout.splitlines() if line.startswith("  - ")]
    assert refs and all(r.startswith(("https://", "http://")) for r in refs), refs
    assert any(r.startswith(BLOB + "docs/validation/") for r in refs)
    assert all(_repo_file(r.split()[0]).exists() for r in refs if r.startswith(BLOB))


@pytest.mark.parametrize(
    "ref, url",
    [
        ("docs/snapshot.md", BLOB + "docs/snapshot.md"),
        ("docs/field-reports.md#report-1-x", BLOB + "docs/field-reports.md#report-1-x"),
        ("rules/knowledge/vllm.yaml (a note)", BLOB + "rules/knowledge/vllm.yaml (a note)"),
        ("https://github.com/huggingface/trl/pull/1", "https://github.com/huggingface/trl/pull/1"),
        ("man nvidia-smi", "man nvidia-smi"),
    ],
)
def test_repo_url(ref, url):
    assert repo_url(ref) == url


def test_examples_point_only_at_files_of_the_repository():
    missing = []
    for path in (ROOT / "examples").rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for ref in re.findall(r"(?<![\w/])((?:\.\./)+[\w./-]+|docs/[\w./-]+\.md)", text):
            base = path.parent if ref.startswith("..") else ROOT
            if not (base / ref).resolve().exists():
                missing.append(f"{path.relative_to(ROOT)}: {ref}")
    assert missing == []
