"""The fix history of the stack's functions (rules/knowledge/fixes/, derived from the packages' git
histories by scripts/derive_fix_history.py): per package, which fix commits changed each function,
the release that first shipped each ("" for a fix after the newest release), its subject and PR or
issue number, hashes of the lines it removed and of the new lines it added, and the failure its
message quotes (exception lines and the package's frames of a traceback). Read lazily, one
package's file at a time, by triage (envdoctor/triage/fixhist.py) for a traceback raised inside
that package."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from envdoctor.knowledge.frame_index import bare_line, named

SCHEMA = "envdoctor.fixes/1"
MAX_BYTES = 4 * 1024 * 1024  # a file larger than this is passed over


@dataclass(frozen=True)
class Fix:
    """One fix commit that changed ``function`` of ``module`` (a path inside the package)."""

    package: str
    module: str
    function: str  # qualified: ``GRPOTrainer._generate``, ``f.<locals>.g``
    commit: str
    date: str
    release: str  # the first release that ships it ("": none yet)
    subject: str
    number: str  # the PR or issue number its subject names ("" if none)
    removed: frozenset[str]  # hashes of the lines it removed from the function (``line_hash``)
    #: the failure its message quotes: exception lines (``Type: message``) and the package's
    #: frames of a traceback in it (module path, function), innermost last
    quoted_exc: tuple[str, ...] = ()
    quoted_frames: tuple[tuple[str, str], ...] = ()
    #: messages of a failure its prose quotes without the exception's name (``'# of LoRAs does not
    #: match # of saved modules' error``)
    quoted_messages: tuple[str, ...] = ()
    #: hashes of the lines it added to the function that the file before it did not hold: a
    #: traceback that prints one ran code with this fix (``line_hash``)
    added: frozenset[str] = frozenset()
    order: int = -1  # its place in the history (oldest first): the default branch's order


def line_hash(line: str) -> str:
    """The hash of a source line as a traceback prints it (the derive script's)."""
    return hashlib.blake2s(bare_line(line).encode(), digest_size=3).hexdigest()


@dataclass
class FixHistory:
    package: str
    source: str  # owner/name of the repository it was read from
    releases: list[str]
    fixes: list[list[Any]]
    functions: dict[str, dict[str, list[list[Any]]]]
    subdir: str = ""  # the repository's folder pip builds the package from ("": its root)
    head_date: str = ""  # the date of the newest commit read

    @property
    def newest(self) -> str:
        """The newest release the history knows ("" for none): a fix after it is in no release."""
        return self.releases[-1] if self.releases else ""

    def _fix(self, module: str, qualname: str, row: list[Any]) -> Fix | None:
        """The fix of one ``functions`` row (an index into ``fixes``, then the removed lines' hashes)."""
        if not row or not isinstance(row[0], int) or not 0 <= row[0] < len(self.fixes):
            return None
        entry = list(self.fixes[row[0]])
        sha, date, release, subject, number = (entry + [""] * 5)[:5]
        said = entry[5] if len(entry) > 5 and isinstance(entry[5], dict) else {}
        return Fix(
            self.package,
            module,
            qualname,
            str(sha),
            str(date),
            str(release),
            str(subject),
            str(number),
            frozenset(str(h) for h in row[1:] if not str(h).startswith("+")),
            _texts(said.get("e")),
            _frames(said.get("f")),
            _texts(said.get("m")),
            frozenset(str(h)[1:] for h in row[1:] if str(h).startswith("+")),
            row[0],
        )

    @cached_property
    def removed_lines(self) -> frozenset[object]:
        """Every entry of the functions' rows (read once per history): a line's hash is among them
        only where some fix removed it (an added line's hash is kept with a ``+``, the fix's index is
        an int), so a line looked up without its frame is tried here before the functions are
        scanned."""
        out: set[object] = set()
        for names in self.functions.values():
            for rows in names.values():
                for row in rows:
                    out.update(row)
        return frozenset(out)

    def changed(self, module: str, function: str) -> list[Fix]:
        """The fixes that changed ``function`` of ``module``: the function named as a traceback
        names it (``compute_loss``, ``GRPOTrainer.compute_loss``, ``f.<locals>.g``), matched by
        its qualified name's last parts."""
        names = self.functions.get(module)
        if not names or not function:
            return []
        want = function.split(".")
        out: list[Fix] = []
        for qualname, rows in names.items():
            if not named(qualname, want):
                continue
            for row in rows:
                fix = self._fix(module, qualname, row)
                if fix is not None:
                    out.append(fix)
        return out

    def defining(self, name: str) -> list[Fix]:
        """The fixes that changed a function or method called ``name`` (its last part) in any
        module: a fix that gave a class the attribute a caller reads (``get_dummy_lora_warmup_rank``)."""
        out: list[Fix] = []
        for module, names in self.functions.items():
            for qualname, rows in names.items():
                if qualname.rsplit(".", 1)[-1] == name:
                    out.extend(f for f in (self._fix(module, qualname, r) for r in rows) if f is not None)
        return out

    def subjects(self, pattern: Any) -> list[Fix]:
        """The fixes whose subject ``pattern`` (a compiled regular expression) finds, each once, as
        the first function it changed."""
        hits = {i for i, row in enumerate(self.fixes) if len(row) > 3 and pattern.search(str(row[3]))}
        out: dict[int, Fix] = {}
        for module, names in self.functions.items():
            for qualname, rows in names.items():
                for row in rows:
                    if row and row[0] in hits and row[0] not in out:
                        fix = self._fix(module, qualname, row)
                        if fix is not None:
                            out[row[0]] = fix
        return [out[i] for i in sorted(out)]

    def named(self, function: str) -> list[Fix]:
        """The fixes that changed a method named ``Class.method`` in any module of the package
        (a call's ``TypeError`` names the callee so, not its module)."""
        if "." not in function:
            return []  # a bare name (``forward``, ``generate``) names no one function
        out: list[Fix] = []
        for module in self.functions:
            out.extend(self.changed(module, function))
        return out


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(x) for x in value[:8]) if isinstance(value, list) else ()


def _frames(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        return ()
    return tuple((str(x[0]), str(x[1])) for x in value[:12] if isinstance(x, list) and len(x) == 2)


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "fixes"


@lru_cache(maxsize=64)  # a message may read every package: all of them stay
def fix_history(package: str) -> FixHistory | None:
    """The fix history of ``package`` (a distribution name), or None where envdoctor has none (or
    its file is not one: too large, not gzip'd JSON of this schema)."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    fixes, functions = doc.get("fixes"), doc.get("functions")
    if not isinstance(fixes, list) or not isinstance(functions, dict):
        return None
    releases = [str(r) for r in doc.get("releases") or []]
    return FixHistory(
        str(doc.get("package") or package),
        str(doc.get("source") or ""),
        releases,
        fixes,
        functions,
        str(doc.get("subdir") or ""),
        str(doc.get("head_date") or ""),
    )


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    """The packages envdoctor has a fix history of."""
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())
