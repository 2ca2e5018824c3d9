"""API drift between a wrapper's patch and the package it patches (rules/knowledge/patches.json.gz).

Unsloth, unsloth_zoo and liger-kernel put their own functions in place of another package's methods
(``Trainer.get_batch_samples = _unsloth_get_batch_samples``; scripts/derive_patch_history.py reads
those assignments from the wrappers' releases). When the patched package changes how it calls the
method (transformers 4.50 passes ``device`` to ``Trainer.get_batch_samples``), the ``TypeError`` names
the wrapper's function: ``_unsloth_get_batch_samples() takes 3 positional arguments but 4 were given``.
The call's shape is then read against the ORIGINAL's signature history (the patched package's method):
the releases whose signature the patch copied (the message's very shape) and those whose callers make
the call the message shows; the change between them is the release to pin below. The wrapper's own
history says from which release its patch takes the new call (the upgrade).

Quiet on a function the user's code defines (a frame of theirs of that name), on a name no wrapper
patches with, and on a patch whose target's signature never changed in the releases read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.knowledge import signature_history as sh
from envdoctor.knowledge.gzip_json import mask
from envdoctor.triage.traceback import Traceback

SCHEMA = "envdoctor.patches/1"
MAX_BYTES = 256 * 1024


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The wrappers' patch history (``{wrapper: {releases, patches, defs}}``), empty without one."""
    from envdoctor.knowledge.gzip_json import load
    from envdoctor.resources import rules_dir

    doc = load(rules_dir() / "knowledge" / "patches.json.gz", SCHEMA, MAX_BYTES)
    wrappers = doc.get("wrappers") if doc else None
    return wrappers if isinstance(wrappers, dict) else {}


@dataclass
class Drift:
    """A wrapper's patch ``func`` standing in for ``target`` (``package``'s ``qualname``), and what
    the histories say of the call the message shows."""

    func: str
    wrappers: tuple[str, ...]
    package: str
    qualname: str
    what: str
    #: the original's change: the release from which its callers make the call, the one before
    since: str
    before: str
    pin: str
    changed: str
    #: (wrapper, the first release read from which its patch takes the call) where its history shows it
    upgrades: list[tuple[str, str]]
    #: the wrapper releases read whose patch gives the message's very shape
    raises_in: list[tuple[str, str]]
    #: the log's versions: of the patched package, of the wrappers (where shown)
    shown: dict[str, str]
    certain: bool


def _rows(rows: Any) -> list[tuple[str, int]]:
    return [(str(r[0]), mask(str(r[1]))) for r in rows if isinstance(r, list) and len(r) == 2]


def _first_after(releases: list[str], works: int, bad: int) -> str | None:
    """The first release that works after the last one that does not (None: none after it)."""
    last_bad = bad.bit_length() - 1
    for i in range(last_bad + 1, len(releases)):
        if works >> i & 1:
            return releases[i]
    return None


def _index(releases: list[str], version: str | None) -> int | None:
    if not version:
        return None
    key = versions.sort_key(version)
    below = [j for j, r in enumerate(releases) if versions.sort_key(r) <= key]
    return max(below) if below else None


def verdict(tb: Traceback, have: dict[str, str]) -> Drift | None:
    """The drift between a wrapper's patch and the package it patches (module docstring), or None."""
    from envdoctor.triage import boundary, sighistory

    if tb.name != "TypeError":
        return None
    m = boundary._CALL.search(tb.message)
    if m is None or m.group("dup"):
        return None
    func = m.group("func")
    if "." in func or "<" in func:
        return None  # a method or a nested function: not a patch assigned by name
    wrappers = table()
    entries = [
        (w, str(p[0]), str(p[1]), mask(str(p[3])))
        for w, doc in wrappers.items()
        for p in doc.get("patches") or []
        if isinstance(p, list) and len(p) == 4 and p[2] == func
    ]
    if not entries or sighistory._user_defines(tb, func):
        return None
    # a patch named as the original (``sdpa_mask``, ``Sampler.forward``'s ``forward``): the message
    # names the original as well, the wrapper's only where a frame of the wrapper is in the traceback
    if any(qual.rsplit(".", 1)[-1] == func for _, _, qual, _ in entries):
        shown_pkgs = {fr.package for t in tb.all() for fr in t.frames}
        if not shown_pkgs & {w for w, *_ in entries}:
            return None
    shape = sighistory._shape(m, tb.message)
    if shape is None:
        return None
    test, what, _, _ = shape
    # the original's history: the releases the patch was written for (the message's very shape)
    # and those whose callers make the call the message shows
    found: dict[tuple[str, str], tuple[sh.Function, int, int]] = {}
    for _, pkg, qual, _ in entries:
        cls, _, name = qual.rpartition(".")
        for p in [pkg] if pkg else [p for p in sh.packages() if p not in wrappers]:
            h = sh.history(p)
            if h is None:
                continue
            for f in h.find(cls or None, name):
                raised, works = sighistory.releases(f, test)
                if raised and works and works.bit_length() > raised.bit_length():
                    found[(f.package, f.qualified)] = (f, raised, works)
    changes = {}
    for f, raised, works in found.values():
        since = _first_after(f.releases, works, raised)
        if since is not None:
            changes[(f.package, since)] = (f, raised, works, since)
    if len(changes) != 1:
        return None  # the target never changed that way, or several targets disagree
    f, raised, works, since = next(iter(changes.values()))
    i = f.releases.index(since)
    before = f.releases[i - 1]
    pin = sighistory._below(f.releases)[i]
    shown: dict[str, str] = {}
    at = _index(f.releases, have.get(f.package))
    if have.get(f.package):
        shown[f.package] = have[f.package]
        if at is not None and raised >> at & 1 and not works >> at & 1:
            return None  # the log's release is one the patch was written for: not this drift
    # the wrappers' own histories: which releases' patch gives this message, from which one it takes the call
    upgrades: list[tuple[str, str]] = []
    raises_in: list[tuple[str, str]] = []
    used = tuple(
        dict.fromkeys(
            [w for w, *_ in entries] + [w for w, doc in wrappers.items() if func in (doc.get("defs") or {})]
        )
    )
    certain_wrapper = False
    for w in used:
        doc = wrappers[w]
        rels = [str(r) for r in doc.get("releases") or []]
        rows = _rows((doc.get("defs") or {}).get(func) or [])
        bad = good = 0
        for text, mk in rows:
            if text.startswith("@"):  # imported from another wrapper: that one's definition decides
                good |= mk
                continue
            s = sh.Signature(text)
            if test.raised(s, 0):
                bad |= mk
            elif test.works(s, 0):
                good |= mk
        if bad:
            certain_wrapper = True
            raises_in.append((w, rels[bad.bit_length() - 1]))
            first = _first_after(rels, good, bad)
            if first:
                upgrades.append((w, first))
        elif good & ~1 and not good & 1 and any(not t.startswith("@") for t, _ in rows):
            upgrades.append((w, rels[(good & -good).bit_length() - 1]))
        ix = _index(rels, have.get(w))
        if have.get(w):
            shown[w] = have[w]
            if ix is not None and good >> ix & 1 and not bad >> ix & 1:
                return None  # the log's wrapper release takes the call: something else failed
    placed = at is not None and bool(works >> at & 1)
    certain = certain_wrapper or placed
    changed = sighistory._change(f, works, f.scope, "", "call taken").strip()
    return Drift(
        func,
        used,
        f.package,
        f.qualname,
        what,
        since,
        before,
        pin,
        changed,
        upgrades,
        raises_in,
        shown,
        certain,
    )


_WORDS = re.compile(r"\s+")


def text(d: Drift) -> tuple[str, str]:
    """The finding's message and fix."""
    wrappers = " / ".join(d.wrappers)
    shown = ", ".join(f"{k} {v}" for k, v in d.shown.items())
    written = "; ".join(f"{w}'s patch gives this very message up to {w} {r}" for w, r in d.raises_in)
    what = (
        f"API drift between {wrappers} and {d.package}: {d.func}() is {wrappers}'s patch put in place of "
        f"{d.package}' {d.qualname}, written for {d.package} up to {d.before}; {d.package} calls "
        f"{d.qualname} differently from {d.pin} ({d.changed}; envdoctor's signature history"
        + (f"; {written}" if written else "")
        + "): the patch is older than the code that calls it; "
        + (f"the log shows {shown}" if shown else "the log shows neither version")
    )
    up = "; ".join(
        f"pip install -U '{w}>={r}' (the first {w} release read whose {d.func}() takes the call)"
        for w, r in d.upgrades
    )
    fix = f"pip install '{d.package}<{d.pin}' (the {d.package} release your {wrappers} patch was written for)"
    fix += f"; or {up}" if up else f"; or upgrade {wrappers} to a release made for {d.package} {d.pin}"
    return _WORDS.sub(" ", what), fix
