"""Which package's release imports the name that failed, and which of its releases stopped (TRI009).

``ImportError: cannot import name 'N' from 'B'`` is a pair that does not fit: the importer A and
the exporter B. Pinning B back to a release that has N is one way; when A's later releases no
longer import N (or import it only under a guard of B's release), upgrading A is the way that keeps
the newer B, and often the only one that works with the rest of the stack (transformers 5 with a
PEFT that still imports ``HybridCache``). The importer index (rules/knowledge/importers.json.gz,
scripts/derive_importer_index.py) says, per release of each importer package, what it imports:

(a) the traceback shows A's frame: A's releases that import N, and the first after them that does
    not: ``upgrade A to >= R``, the pin of B as the other way where B's history gives one; where
    every later release of A imports it too, B must have it: B's range, or A's older releases;
(b) no frame names A (a log that keeps only the message, an importer cut off): the packages whose
    releases import N from B are the candidates, named with their releases; one candidate: that
    importer's upgrade; several: each of them;
(c) each release of A that imports N requires (its packaging) a B that has N: a B installed as A
    requires cannot lack it. The message then says the module in memory is not the installed
    release, or B was installed against A's requirement: which one the log's versions tell, so
    the finding is a warning with both answers (a notebook: restart the runtime after installing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envdoctor import versions
from envdoctor.knowledge import optional_imports
from envdoctor.knowledge.importers import Importer, importers
from envdoctor.triage import boundary

if TYPE_CHECKING:
    from envdoctor.triage.boundary import Boundary
    from envdoctor.triage.symbols import Verdict
    from envdoctor.triage.traceback import Traceback

SOURCE = "the importer index (rules/knowledge/importers.json.gz)"


@dataclass
class Answer:
    """The fix in the importer's terms, what the message adds (``note``), the importer named where
    the traceback does not show it (``caller``), and whether the evidence settles it (``certain``:
    False where (c) holds: the log's versions would tell)."""

    fix: str
    note: str
    caller: str | None = None
    certain: bool = True


def _said(imp: Importer) -> str:
    """``peft 0.16.0 to 0.17.1 import HybridCache from transformers; 0.18.0 on do not``."""
    text = f"{imp.package} {imp.span()} import {imp.name} from {imp.module}"
    stop = imp.stopped
    if stop is not None:
        tail = imp.releases.index(stop)
        only_guarded = any(i in imp.guarded for i in range(tail, len(imp.releases)))
        text += f"; {imp.package} {stop} on " + (
            "imports it only under a guard of the release" if only_guarded else "does not"
        )
    else:
        text += f" (every {imp.package} release since {imp.releases[imp.first]}, to the newest read)"
    return text


def _upgrade(imp: Importer, have: dict[str, str]) -> str:
    """``pip install --upgrade 'peft>=0.18.0' (…)`` for an importer whose newer releases stopped."""
    stop = imp.stopped
    assert stop is not None
    text = f"pip install --upgrade '{imp.package}>={stop}' ({_said(imp)})"
    b = imp.provider
    spec = optional_imports.base_specifier(imp.package, b, stop)
    if spec and b in have and versions.satisfies(have[b], spec) is False:
        text += (
            f" — {imp.package} {stop} requires {b}{spec} and the log shows {b} {have[b]}: install the "
            f"{imp.package} release whose requirement admits it"
        )
    return text


def _covered(imp: Importer, v: Verdict | None) -> str | None:
    """(c): every release of ``imp`` that imports the name requires a provider release that has
    it (its base requirement's floor is at or past the release where the name appeared): the
    floor; None where any of them does not, or the history does not date the name."""
    fits = v.fits() if v is not None else ""
    if not fits.startswith(">=") or "," in fits:
        return None
    since = fits[2:]
    floors = set()
    for i in imp.imports:
        spec = optional_imports.base_specifier(imp.package, imp.provider, imp.releases[i])
        floor = boundary._floor(spec or "")
        if not floor or versions.sort_key(floor) < versions.sort_key(since):
            return None
        floors.add(floor)
    return min(floors, key=versions.sort_key) if floors else None


#: a notebook's cell in a traceback (Jupyter's, Colab's)
NOTEBOOK = (b"ipython-input-", b"/ipykernel_", b"in <cell line: ", b"\nCell In[")


def notebook(tb: Traceback, head: bytes) -> bool:
    """The log is a notebook's output: a frame of a cell (the traceback's, or the log's first MiB)."""
    return any(
        "ipython-input-" in f.path or "/ipykernel_" in f.path for t in tb.all() for f in t.frames
    ) or any(n in head for n in NOTEBOOK)


def answer(
    tb: Traceback,
    b: Boundary,
    v: Verdict | None,
    have: dict[str, str],
    frames_shown: bool,
    in_notebook: bool = False,
) -> Answer | None:
    """The importer's answer to a failed ``from M import N`` (module docstring); None where the
    index does not know the pair."""
    if tb.name != "ImportError":
        return None
    m = boundary._IMPORT.search(tb.message)
    if m is None:
        return None
    module, name = m.group("module"), m.group("name").split(".")[0]
    provider = b.callee
    if b.caller is not None:
        found = importers(provider, module, name, only=b.caller)
        return _framed(found[0], v, have, in_notebook) if found else None
    if frames_shown and b.caller_frame is not None:
        return None  # the user's own code imports it: its import, or the pin of B
    return _candidates(importers(provider, module, name), v, have) or _pinner(provider, v, have)


def _pinner(b: str, v: Verdict | None, have: dict[str, str]) -> Answer | None:
    """(b) for an exporter whose release line one package pins exactly (torch pins triton, and no
    other package of the pins does; its releases pin most of triton's: triton ships for torch's
    inductor, which imports its names): that package's releases whose pinned B has the name. The
    fix realigns B with the pinner's own pin; B's range is the other way."""
    if v is None or not v.fits():
        return None
    from envdoctor.knowledge.symbol_history import pinners, pins

    owners = [a for a in pinners(b) if a != b]
    if len(owners) != 1:
        return None  # B's release line follows no one package's pins (torch: vLLM's, xformers', …)
    rows = []
    for a, by_release in sorted(pins().items()):
        if a not in owners:
            continue
        pinned = {req.get(b, "")[2:] for req in by_release.values() if req.get(b, "").startswith("==")}
        if len(pinned & set(v.releases)) * 2 < len(v.releases):
            continue  # A pins a few of B's releases (a framework's tested pair), not B's release line
        good = [
            r
            for r, req in by_release.items()
            if (spec := req.get(b, "")).startswith("==")
            and spec[2:] in v.releases
            and v.works >> v.releases.index(spec[2:]) & 1
        ]
        if good and all(
            (req.get(b) or "").startswith(("==", "~=")) for req in by_release.values() if b in req
        ):
            good.sort(key=versions.sort_key)
            rows.append((a, good))
    if len(rows) != 1:
        return None
    a, good = rows[0]
    span = good[0] if len(good) == 1 else f"{good[0]} to {good[-1]}"
    shown = f" (the log shows {a} {have[a]})" if a in have else f" (`pip show {a}` names the {b} it requires)"
    return Answer(
        f"pip install the {b} release your {a} requires{shown}: {a} pins {b} exactly, and a {b} other than "
        f"that one (installed or upgraded apart from {a}, or a second copy loaded first) does not fit "
        f"{a}'s code; or pip install '{b}{v.fits()}' ({v.said()})",
        f" ({a} {span} pin a {b} release that has {v.what}: their wheels' Requires-Dist)",
        caller=f"{a}, which pins {b}",
    )


def _past(imp: Importer, version: str | None) -> bool:
    """``version`` of the importer (the log's) is one the index did not read, at or past the release
    that stopped importing the name: upgrading to that release is no answer (a release newer than
    the index knows: its imports are not known)."""
    stop = imp.stopped
    return bool(version and stop and imp.has(version) is None and versions.at_least(version, stop))


def _predates(v: Verdict | None) -> str | None:
    """The log's B is older than B's releases that have the name (the history placed it before
    them): the first of those; None where the log shows no B or one at or past them. Then the name
    is not yet in B, not gone from it: an importer's later release that stopped importing it
    (because B removed it) does not answer it; B's upgrade does."""
    if v is None or v.shown is None or v.placed not in ("older", "lacks"):
        return None
    first = next((i for i in range(len(v.releases)) if v.works >> i & 1), None)
    if first is None:
        return None
    if v.placed == "older" or versions.sort_key(v.shown) < versions.sort_key(v.releases[first]):
        return v.releases[first]
    return None


def _older(imp: Importer) -> str:
    """``; or pip install 'peft<0.14.0' (…)``: the importer's releases before the first that imports
    the name, where the index read some."""
    if imp.first == 0:
        return ""
    return (
        f"; or pip install '{imp.package}<{imp.releases[imp.first]}' (the {imp.package} releases before "
        "it do not import it)"
    )


def _too_old(imp: Importer, v: Verdict, since: str) -> Answer:
    """The log's B predates the name: B's upgrade, whichever release of the importer."""
    b = imp.provider
    upper = next((p for p in v.fits().split(",") if p.startswith("<")), "")
    spec = f">={since}" + (f",{upper}" if upper else "")
    return Answer(
        f"pip install '{b}{spec}' (the log's {b} {v.shown} is older than the {b} releases that have "
        f"{imp.module}.{imp.name}, {since} on as envdoctor read them: upgrading {imp.package} does not "
        f"help, its releases that import it need a newer {b})" + _older(imp),
        f" (envdoctor's importer index: {_said(imp)})",
    )


def _framed(imp: Importer, v: Verdict | None, have: dict[str, str], in_notebook: bool) -> Answer | None:
    """(a) and (c): the importer's frame is shown."""
    a, b = imp.package, imp.provider
    shown = have.get(a)
    if shown is not None and imp.has(shown) is False:
        return None  # the log's release of A does not import it (as the index read it)
    if _past(imp, shown):
        return None  # the log's A is past the release that stopped (newer than the index): B's range
    since = _predates(v)
    if since is not None and v is not None:
        return _too_old(imp, v, since)
    pin = f"pip install '{b}{v.fits()}' ({v.said()})" if v is not None and v.fits() else ""
    floor = _covered(imp, v)
    if floor is not None and b not in have:
        restart = (
            "restart the runtime after installing (a notebook that pip-installs after importing keeps "
            f"the {b} it imported first)"
            if in_notebook
            else f"look for what loaded another {b} first (an import order, a second copy)"
        )
        return Answer(
            f"`pip show {b}`: below {floor}, pip install '{b}>={floor}' (what {a} requires); at "
            f"{floor} or newer, the {b} in memory is not the installed release: {restart}",
            f" (envdoctor's importer index: {_said(imp)}; each of those releases requires {b}>={floor}, "
            f"which has {imp.name}: a {b} installed as {a} requires has it, so the {b} this process imported "
            f"is another release, or {b} was installed against {a}'s requirement)",
            certain=False,
        )
    if imp.stopped is not None:
        fix = _upgrade(imp, have)
        if pin:
            fix += f"; or {pin}, keeping {a} at {shown or 'its release'}"
        return Answer(fix, f" (envdoctor's importer index: {_said(imp)})")
    # the newest releases of A import it too: B must have it
    older = _older(imp)
    if pin:
        return Answer(f"{pin}: {a} imports it in every release since {imp.releases[imp.first]}{older}", "")
    oldest = _oldest(b, imp.module, imp.name)
    if oldest is None:
        return None
    return Answer(
        f"pip install '{b}>={oldest}' (every {b} release envdoctor read, {oldest} on, has "
        f"{imp.module}.{imp.name}, "
        f"and {a} imports it in every release since {imp.releases[imp.first]}: the installed {b} is "
        f"older than {a} was made for — drop the pin that holds {b} back){older}",
        f" (envdoctor's importer index: {_said(imp)})",
    )


def _oldest(b: str, module: str, name: str) -> str | None:
    """B's oldest release read, where every release B's history read has ``module.name``."""
    from envdoctor.knowledge.symbol_history import history

    h = history(b)
    if h is None or h.name(module, name) & h.full != h.full:
        return None
    return h.releases[0]


def _candidates(found: Sequence[Importer], v: Verdict | None, have: dict[str, str]) -> Answer | None:
    """(b): no frame names the importer: the packages whose releases import it. The importer may
    be code the index does not read (the user's, a vendored copy), so each candidate's answer is
    given for that candidate, and the pin of B for the rest; a candidate the log shows at a release
    that imports it is the importer. None where no candidate's later releases stopped importing
    it (then B's range is the answer whoever imports it)."""
    if _predates(v) is not None:
        return None  # the log's B is older than the name: B's range answers, whoever imports it
    shown = [imp for imp in found if have.get(imp.package) and imp.has(have[imp.package])]
    if not shown:
        found = [
            imp
            for imp in found
            if not (have.get(imp.package) and imp.has(have[imp.package]) is False)
            and not _past(imp, have.get(imp.package))
        ]
    stopped = [imp for imp in shown or found if imp.stopped is not None]
    if not stopped:
        return None
    b = stopped[0].provider
    pin = f"pip install '{b}{v.fits()}' ({v.said()})" if v is not None and v.fits() else ""
    note = f" (envdoctor's importer index: {'; '.join(_said(imp) for imp in shown or found)})"
    if shown:
        imp = shown[0]
        fix = _upgrade(imp, have) + f" — the log shows {imp.package} {have[imp.package]}"
        return Answer(fix + (f"; or {pin}" if pin else ""), note, caller=imp.package)
    still = [imp.package for imp in found if imp.stopped is None]
    ways = [f"if it is {imp.package}: {_upgrade(imp, have)}" for imp in stopped]
    rest = ", ".join(["your own code", *still]) if still else "your own code or another package"
    if pin:
        ways.append(f"if it is {rest}: {pin}")
    names = " or ".join(imp.package for imp in stopped)
    return Answer(
        "the importer is not shown (`pip list` tells which of these is installed): " + "; ".join(ways),
        note,
        caller=f"{names}, or your own",
    )
