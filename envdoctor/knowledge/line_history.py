"""The line history of the stack's functions (rules/knowledge/linehist/, derived from the packages'
git histories by scripts/derive_line_history.py): per package and function, the lines any commit
removed (not only fixes) together with the names the function stopped using with that commit, and
the release that first shipped it. Read lazily, one package's file at a time, by triage
(envdoctor/triage/linehist.py) for a drift-shaped exception raised with a frame in that package."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.frame_index import named

SCHEMA = "envdoctor.linehist/1"
MAX_BYTES = 2 * 1024 * 1024  # a file larger than this is passed over


@dataclass(frozen=True)
class Change:
    """One commit that removed ``line`` (a ``line_hash``) from ``function`` of ``module`` and with
    it the function's last use of ``names`` (``a:optim_bits``, ``k:use_tqdm``, ``i:X``)."""

    module: str
    function: str  # qualified: ``GRPOTrainer._generate``; ``<module>`` for a module's top level
    line: str
    removed: bool  # the line itself was removed (False: a statement over several lines changed)
    names: frozenset[str]
    commit: str
    date: str
    release: str  # the first release that ships it
    subject: str
    number: str


@dataclass
class LineHistory:
    package: str
    source: str
    releases: list[str]
    commits: list[list[Any]]
    functions: dict[str, dict[str, list[list[Any]]]]

    def changes(self, module: str, function: str) -> list[Change]:
        """The changes of ``function`` of ``module`` (named as a traceback names it: matched by its
        qualified name's last parts; ``<module>`` for a module's top level)."""
        names = self.functions.get(module)
        if not names or not function:
            return []
        want = function.split(".")
        out: list[Change] = []
        for qualname, rows in names.items():
            if qualname != function and (function == "<module>" or not named(qualname, want)):
                continue
            for row in rows:
                c = self._change(module, qualname, row)
                if c is not None:
                    out.append(c)
        return out

    def _change(self, module: str, qualname: str, row: list[Any]) -> Change | None:
        if len(row) < 3 or not isinstance(row[0], int) or not 0 <= row[0] < len(self.commits):
            return None
        sha, date, release, subject, number = (list(self.commits[row[0]]) + [""] * 5)[:5]
        line = str(row[1])
        return Change(
            module,
            qualname,
            line.lstrip("~"),
            not line.startswith("~"),
            frozenset(str(x) for x in row[2:]),
            str(sha),
            str(date),
            str(release),
            str(subject),
            str(number),
        )


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "linehist"


@lru_cache(maxsize=64)
def line_history(package: str) -> LineHistory | None:
    """The line history of ``package`` (a distribution name), or None where envdoctor has none (or
    its file is not one: too large, not gzip'd JSON of this schema)."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    commits, functions = doc.get("commits"), doc.get("functions")
    if not isinstance(commits, list) or not isinstance(functions, dict):
        return None
    return LineHistory(
        str(doc.get("package") or package),
        str(doc.get("source") or ""),
        [str(r) for r in doc.get("releases") or []],
        commits,
        functions,
    )


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    """The packages envdoctor has a line history of."""
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())
