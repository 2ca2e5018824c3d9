"""A package's own code reads a field its dataclass has in every release from an object of that
class's name that lacks it (TRI009): the object is another package's class of the same name.

``AttributeError: 'TrainingArguments' object has no attribute 'eval_strategy'`` raised in
transformers' own frame (its notebook callback reads ``args.eval_strategy``), where every
transformers release the symbol history read has ``TrainingArguments.eval_strategy`` as a dataclass
field (set by its ``__init__``: no method has to run first): the ``args`` passed in is not
transformers' ``TrainingArguments`` but another package's class of the same name (setfit's),
written for another transformers release. Where the history shows the class's field under a close
name in older releases only (``evaluation_strategy``, gone after 4.48), the other class follows
that older naming: the transformers it was written for is older.

Quiet where the class is no dataclass (an attribute a method sets may not be set yet: the
verdict of envdoctor/triage/symbols.py says so), where some release read lacks the field (drift:
symbols.py's verdict), where the raising frame is not that package's, or where the log shows the
package at a release older than the history (its own class may lack it there: drift again)."""

from __future__ import annotations

import difflib

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.knowledge.symbol_history import History, history, packages
from envdoctor.triage import boundary
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.missing import exact_version
from envdoctor.triage.traceback import Traceback

RULE = "TRI009"


def _dataclass(h: History, cls: str) -> tuple[int, int]:
    """The releases that have class ``cls`` and those where its ``__init__`` comes from its fields."""
    scope = fields = 0
    for _, rel, node in h.classes(cls):
        scope |= rel
        if "d" in node:
            spec = node["d"]
            fields |= rel if spec == 0 or spec is None else rel & _mask(spec)
    return scope, fields


def _mask(spec: object) -> int:
    from envdoctor.knowledge.gzip_json import mask

    return mask(spec)


def _older_name(h: History, cls: str, attr: str, scope: int) -> tuple[str, str, str] | None:
    """A field of ``cls`` close to ``attr`` that the older releases have and the newest lack (the
    name ``attr`` replaced): ``(name, first release with it, release that dropped it)``."""
    best: tuple[float, str, int] | None = None
    for _, _, node in h.classes(cls):
        for name in node.get("a", {}) if isinstance(node.get("a"), dict) else ():
            if name == attr or len(name) > 200:
                continue
            have = h.member(cls, "a", name)[0] & scope
            newest = scope.bit_length() - 1
            if not have or have >> newest & 1:
                continue  # the newest release still has it: not the name attr replaced
            ratio = difflib.SequenceMatcher(None, name, attr).ratio()
            if ratio >= 0.7 and (best is None or ratio > best[0]):
                best = (ratio, name, have)
    if best is None:
        return None
    _, name, have = best
    first = (have & -have).bit_length() - 1
    last = have.bit_length() - 1
    return name, h.releases[first], h.releases[last + 1]


def foreign_object(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI009 for a field every release of the raising package's dataclass has, missing from the
    object its code was given (module docstring), or None."""
    if t.name != "AttributeError" or warning_line(m) or not t.frames:
        return None
    found = boundary._OBJECT_ATTR.search(t.message)
    if found is None or boundary._MODULE_ATTR.search(t.message) or t.message.startswith("type object"):
        return None
    cls, attr = found.group("obj").rsplit(".", 1)[-1], found.group("attr")
    frame = t.frames[-1]
    pkg = frame.package
    if pkg is None or pkg not in packages():
        return None
    h = history(pkg)
    if h is None:
        return None
    scope, fields = _dataclass(h, cls)
    have = h.member(cls, "a", attr)[0] & scope
    if not scope or have != scope or fields & scope != scope:
        return None  # no class of that name, a release lacks it (drift), or not a dataclass
    version = exact_version(log, pkg)
    if version is not None and versions.below(version, h.releases[0]):
        return None  # older than the history: its own class may lack it
    old = _older_name(h, cls, attr, scope)
    own = f"{pkg}'" if pkg.endswith("s") else f"{pkg}'s"
    read = f"{len(h.releases)} {pkg} releases read, {h.releases[0]} to {h.releases[-1]}"
    naming = (
        f"; {pkg} called it '{old[0]}' until {old[2]} ({old[1]} is the oldest release read with it): the "
        f"other class follows that older naming, written for a {pkg} older than the rename"
        if old
        else ""
    )
    what = (
        f"{own} own {frame.function or 'code'} ({frame.at}) reads {attr} from a {cls} that lacks it, "
        f"yet every {pkg} release's {cls} has {attr} as a dataclass field, set when it is created "
        f"({read}): the object is not {own} {cls} but another package's class of the same name (a "
        f"library built on {pkg}: its own {cls}), written for another {pkg} release{naming}"
    )
    fix = (
        f"pin {pkg} to the release the package that defines this {cls} supports (its requirements or "
        f"issue tracker name it; one older than the rename to {attr})"
        if old
        else f"pin {pkg} to the release the package that defines this {cls} supports"
    ) + f", or upgrade that package to a release written for the installed {pkg}"
    d = finding(RULE, [m], log, what, fix, callee=pkg, exception=t.name, answer_from="the symbol history")
    return at_severity(d, Severity.WARNING)
