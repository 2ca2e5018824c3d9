"""The signature history of the stack's packages (rules/knowledge/signatures/, derived from their
releases by scripts/derive_signature_history.py): per package, the parameter lists of the functions
and methods whose signature changed between releases, each signature with the releases that have
it. Read lazily, one package's file at a time, by triage only, only for a ``TypeError`` of a
call's arguments (unexpected keyword, missing positional, wrong arity)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.gzip_json import mask

SCHEMA = "envdoctor.signatures/1"
MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Signature:
    """One signature (the derive script's string): parameters in order, each with whether it has a
    default and how it may be passed."""

    text: str

    @property
    def static(self) -> bool:
        return self.text.startswith("!")

    def params(self) -> list[tuple[str, str, bool]]:
        """``(name, kind, required)``; kind ``pos`` (positional only), ``any`` (positional or by
        keyword), ``kw`` (keyword only), ``*`` (``*args``), ``**``."""
        out: list[tuple[str, str, bool]] = []
        kind = "any"
        items = [p for p in self.text.lstrip("!").split(",") if p]
        if "/" in items:
            cut = items.index("/")
            out += [(p.rstrip("="), "pos", not p.endswith("=")) for p in items[:cut]]
            items = items[cut + 1 :]
        for p in items:
            if p == "**":
                out.append(("**", "**", False))
            elif p.startswith("*"):
                if p != "*":
                    out.append((p[1:], "*", False))
                kind = "kw"
            else:
                out.append((p.rstrip("="), kind, not p.endswith("=")))
        return out

    def takes_keyword(self, name: str) -> bool:
        return any(n == name and k in ("any", "kw") or k == "**" for n, k, _ in self.params())

    def requires(self, name: str) -> bool:
        return any(n == name and req and k in ("pos", "any", "kw") for n, k, req in self.params())

    def has(self, name: str) -> bool:
        return any(n == name and k in ("pos", "any", "kw") for n, k, _ in self.params())

    def positional(self) -> tuple[int, int | None]:
        """How many arguments a call may pass by position, the bound first one not counted:
        ``(required, most)``; ``most`` None with ``*args``."""
        ps = self.params()
        req = sum(1 for _, k, r in ps if k in ("pos", "any") and r)
        most = None if any(k == "*" for _, k, _ in ps) else sum(1 for _, k, _ in ps if k in ("pos", "any"))
        return req, most


@dataclass
class Function:
    """A function of ``package`` (``module:Qual.name``) and its signatures over the releases."""

    package: str
    qualified: str
    releases: list[str]
    signatures: list[tuple[Signature, int]]

    @property
    def module(self) -> str:
        return self.qualified.partition(":")[0]

    @property
    def qualname(self) -> str:
        return self.qualified.partition(":")[2]

    @property
    def method(self) -> bool:
        return "." in self.qualname

    @property
    def scope(self) -> int:
        out = 0
        for _, m in self.signatures:
            out |= m
        return out

    def where(self, test: Any) -> int:
        """The releases whose signature passes ``test``."""
        out = 0
        for sig, m in self.signatures:
            if test(sig):
                out |= m
        return out


@dataclass
class History:
    package: str
    releases: list[str]
    functions: dict[str, Any]
    #: the private names kept because other packages call them: name -> those packages
    callers: dict[str, list[str]] = field(default_factory=dict)

    def find(self, cls: str | None, name: str) -> list[Function]:
        """The functions named ``name`` (of class ``cls`` where given; else module-level ones and
        methods alike); not those of transformers' ``modular_*.py`` files, which generate the
        modeling ones and are never imported."""
        out = []
        for q, rows in self.functions.items():
            module, _, qual = q.partition(":")
            owner, _, short = qual.rpartition(".")
            if short != name or (cls is not None and owner != cls):
                continue
            if module.rsplit(".", 1)[-1].startswith("modular_"):
                continue
            if not isinstance(rows, list):
                continue
            sigs = [
                (Signature(str(r[0])), mask(str(r[1]))) for r in rows if isinstance(r, list) and len(r) == 2
            ]
            if sigs:
                out.append(Function(self.package, q, self.releases, sigs))
        return out


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "signatures"


@lru_cache(maxsize=64)  # a message may read every package: all of them stay
def history(package: str) -> History | None:
    """The signature history of ``package``, or None where envdoctor has none (or its file is not
    one: too large, not gzip'd JSON of this schema)."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    fns, releases = doc.get("functions"), doc.get("releases")
    if not isinstance(fns, dict) or not isinstance(releases, list) or not releases:
        return None
    raw = doc.get("callers")
    callers = (
        {str(k): [str(x) for x in v] for k, v in raw.items() if isinstance(v, list)}
        if isinstance(raw, dict)
        else {}
    )
    return History(str(doc.get("package") or package), [str(r) for r in releases], fns, callers)


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())


_INT = re.compile(r"\d+")


def most_of(takes: str) -> int | None:
    """``"2"`` / ``"from 2 to 3"`` (a ``takes … positional arguments`` message): the most."""
    found = _INT.findall(takes)
    return int(found[-1]) if found else None
