"""Where a commit of TRL's main branch stands among TRL's releases (rules/knowledge/trl_commits.txt,
written by scripts/derive_trl_commits.py from the TRL repository: envdoctor has no network at run
time). Read only when a repository pins TRL by a git reference."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from envdoctor import versions

FILE = "knowledge/trl_commits.txt"
#: a commit prefix shorter than this is not placed (ambiguous)
MIN_PREFIX = 7
_HEX = re.compile(r"[0-9a-f]{7,40}")
_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?(?:\.post\d+)?)")


@dataclass(frozen=True)
class Placement:
    """A git reference of TRL: the version it installs as, and the releases around it."""

    ref: str
    version: str | None  # None: not placed
    before: str | None = None  # the newest release older than it
    after: str | None = None  # the oldest release that contains it
    date: str = ""
    why: str = ""  # how it was placed, or why not

    def said(self) -> str:
        """``a TRL commit between 0.17.0 and 0.18.0 (installs as 0.18.0.dev0)`` and the like."""
        if self.version is None:
            return self.why
        if self.why:
            return self.why
        if self.after == self.version:
            return f"the commit of TRL {self.version}'s release"
        span = f"after TRL {self.before}" if self.before else "a TRL commit"
        span += f", before {self.after}" if self.after else " (no release contains it yet)"
        return f"a TRL main commit {span}: installs as {self.version}"


@dataclass(frozen=True)
class _Row:
    version: str
    after: str | None
    date: str
    shas: tuple[str, ...]


@lru_cache(maxsize=1)
def _rows() -> tuple[tuple[_Row, ...], str]:
    return _table()[0], _table()[2]


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[_Row, ...], dict[str, tuple[str, ...]], str]:
    """(rows, GRPOConfig field events by key, header line)."""
    from envdoctor.resources import rules_dir

    path = rules_dir() / FILE
    rows: list[_Row] = []
    keys: dict[str, tuple[str, ...]] = {}
    head = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            head = head or line
            continue
        parts = line.split()
        if parts and parts[0] == "key" and len(parts) >= 3:
            keys[parts[1]] = tuple(parts[2:])
        elif len(parts) >= 4:
            rows.append(_Row(parts[0], None if parts[1] == "-" else parts[1], parts[2], tuple(parts[3:])))
    return tuple(rows), keys, head


@lru_cache(maxsize=1)
def _order() -> dict[str, int]:
    """Each commit prefix of the table by its position (main's order within a release's run)."""
    return {sha: i for i, sha in enumerate(s for r in _table()[0] for s in r.shas)}


def _position(ref: str) -> int | None:
    sha = ref.strip().lower()
    if not _HEX.fullmatch(sha):
        return None
    hits = [i for s, i in _order().items() if s.startswith(sha[:10]) or sha.startswith(s)]
    return hits[0] if len(hits) == 1 else None


def has_key(ref: str, key: str) -> bool | None:
    """Whether GRPOConfig declares ``key`` at the TRL commit ``ref`` (None: not known — a commit
    or a key the table does not hold)."""
    at = _position(ref)
    events = _table()[1].get(key)
    if at is None or events is None:
        return None
    order = _order()
    present = False
    for event in events:
        where = order.get(event[1:])
        if where is not None and where <= at:
            present = event.startswith("+")
    return present


def releases() -> list[str]:
    """The releases of the table (versions of release commits), oldest first."""
    out = {r.version for r in _rows()[0] if r.after == r.version}
    return sorted(out, key=versions.sort_key)


def place(ref: str) -> Placement:
    """Place a TRL git reference: a commit (7 to 40 hex digits), a release tag (``v0.15.2``),
    else a branch (not placed: it moves)."""
    ref = ref.strip()
    tag = _TAG.fullmatch(ref)
    if tag and (ref.startswith("v") or ref.count(".") >= 1) and versions.parse(tag.group(1)) is not None:
        return Placement(ref, tag.group(1), why=f"the release tag {ref}: TRL {tag.group(1)}")
    if not _HEX.fullmatch(ref.lower()):
        return Placement(
            ref, None, why=f"the branch {ref!r} of TRL moves with every commit: its release is not decided"
        )
    sha = ref.lower()
    rows = _rows()[0]
    hits = [r for r in rows for s in r.shas if s.startswith(sha[:10]) or sha.startswith(s)]
    if len(hits) != 1 or len(sha) < MIN_PREFIX:
        return Placement(
            ref,
            None,
            why=f"a TRL commit envdoctor cannot place ({ref[:12]}: not in its table of TRL's main branch)",
        )
    row = hits[0]
    known = releases()
    older = [v for v in known if versions.sort_key(v) < versions.sort_key(row.version)]
    before = older[-1] if older else None
    return Placement(ref, row.version, before=before, after=row.after, date=row.date)
