"""The frame index of the stack's packages (rules/knowledge/frames/, derived from the packages' git
histories at their release tags by scripts/derive_frame_index.py): per package, release by release,
where each function of each file lies and a short hash (one hex digit) of each of its lines. Triage
(envdoctor/triage/frameversions.py) asks it which releases a traceback's frame fits; a package's
file is read only for a log with a frame in that package."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

SCHEMA = "envdoctor.frames/1"
MAX_BYTES = 2 * 1024 * 1024  # a file larger than this is passed over


def bare_line(line: str) -> str:
    """A source line as both derived indexes key it: without whitespace, one kind of quote (a
    traceback and the repository print the same line alike)."""
    return "".join(line.split()).replace("'", '"')


def line_hash(line: str, digits: int = 1) -> str:
    """``digits`` hex digits of a source line as a traceback prints it (the derive script's)."""
    return hashlib.blake2s(bare_line(line).encode(), digest_size=1).hexdigest()[:digits]


def named(qualname: str, want: list[str]) -> bool:
    """A function's qualified name (``GRPOTrainer.compute_loss``) ends with the parts a traceback
    or a message names it by (``compute_loss``, ``GRPOTrainer.compute_loss``)."""
    return qualname.split(".")[-len(want) :] == want


@dataclass
class FrameIndex:
    package: str
    source: str  # owner/name of the repository it was read from
    releases: list[str]  # oldest first
    bodies: list[str]
    files: dict[str, dict[str, list[list[int]]]]
    digits: int = 1  # hex digits of a line's hash

    def fits(self, module: str, function: str, line: int, code: str = "") -> frozenset[int] | None:
        """The releases (indexes into ``releases``) whose ``module`` has a function named as the
        frame names it (``__init__``, ``GRPOTrainer.__init__``: matched by its qualified name's
        last parts) spanning ``line``, with ``code`` on it when given; None where the index knows
        no such function in that file at any release (the frame places nothing)."""
        names = self.files.get(module)
        if not isinstance(names, dict) or not function or line <= 0:
            return None
        want = function.split(".")
        rows: list[Any] = [r for q, r in names.items() if named(q, want)]
        if not rows:
            return None
        n = self.digits
        h = line_hash(code, n) if code.strip() else ""
        out: set[int] = set()
        for runs in rows:
            for run in runs if isinstance(runs, list) else ():
                try:
                    r0, r1, first, body_id = (int(x) for x in run[:4])
                    body = self.bodies[body_id]
                except (TypeError, ValueError, IndexError):
                    continue
                at = line - first
                if not 0 <= at < len(body) // n:
                    continue
                if h and body[n * at : n * at + n] != h:
                    continue
                out.update(range(max(r0, 0), min(r1, len(self.releases) - 1) + 1))
        return frozenset(out)

    def defines(self, function: str) -> list[str]:
        """The files (paths inside the package) that define ``function`` at some release indexed,
        matched as ``fits`` matches a frame's; a nested function (``<locals>``) is not one."""
        want = function.split(".")
        return sorted(
            module
            for module, names in self.files.items()
            if isinstance(names, dict) and any(named(q, want) and "<locals>" not in q for q in names)
        )


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "frames"


@lru_cache(maxsize=64)  # a message may read every package: all of them stay
def frame_index(package: str) -> FrameIndex | None:
    """The frame index of ``package`` (a distribution name), or None where envdoctor has none (or
    its file is not one: too large, not gzip'd JSON of this schema)."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    releases, bodies, files = doc.get("releases"), doc.get("bodies"), doc.get("files")
    if not isinstance(releases, list) or not isinstance(bodies, list) or not isinstance(files, dict):
        return None
    return FrameIndex(
        str(doc.get("package") or package),
        str(doc.get("source") or ""),
        [str(r) for r in releases],
        [str(b) for b in bodies],
        files,
        1 if doc.get("digits") == 1 else 2,
    )


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    """The packages envdoctor has a frame index of."""
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())
