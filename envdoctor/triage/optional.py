"""An optional dependency a package needs for what the run does, not installed (TRI013).

A package that supports another only when it is installed imports that package's names under a
guard (``if is_peft_available(): from peft import LoraConfig``; ``try: import x`` / ``except
ImportError``). Where the other package is missing, the name stays undefined and the package's
first use of it raises ``NameError: name 'LoraConfig' is not defined`` in the package's own frame: a
message that names neither package. The optional-import index (rules/knowledge/optional_imports.json.gz,
scripts/derive_optional_imports.py) says which module imports which name from which package under
which guard, in which releases; the package's own requirements (its extra, or its base
requirements) give the version to install. An error: the package's frame used a name its code binds
only when the other package imports.

Quiet for a NameError in the user's code (no package frame), a name the package binds
unconditionally (a typo, a bug of that release: TRI014's), a name the package's release at hand
does not guard, and a guard on a package the package always requires (``torch``: such a guard
tests a version or a device, not whether it is installed).
"""

from __future__ import annotations

import builtins
import re

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.knowledge import optional_imports, symbol_history
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.missing import distribution, exact_version, install_line
from envdoctor.triage.traceback import Frame, Traceback

RULE = "TRI013"
_UNDEFINED = re.compile(r"^name '(?P<name>[A-Za-z_]\w{0,200})' is not defined")


def _fits(rows: list[optional_imports.Guarded], version: str | None) -> list[optional_imports.Guarded]:
    """The rows whose releases hold ``version`` (all of them where the log shows no version, or a
    version outside the releases read)."""
    if version is None:
        return rows
    held = [r for r in rows if version in r.releases]
    if held:
        return held
    known = {v for r in rows for v in r.releases}
    read = optional_imports.releases_of(rows[0].package) if rows else ()
    inside = bool(read) and versions.at_least(version, read[0]) and not versions.below(read[-1], version)
    return [] if version in known or (inside and version in read) else rows


def undefined_name(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI013 for a ``NameError`` raised in a package's frame on a name it imports only when another
    package is available (module docstring), or None."""
    if t.name != "NameError" or warning_line(m):
        return None
    found = _UNDEFINED.match(t.message.strip())
    frame: Frame | None = t.frames[-1] if t.frames else None
    if found is None:
        return None
    if frame is None or frame.package is None:  # the user's code, or no frame to place the name in
        return versioned_name(found.group("name"), frame, m, log)
    name, package = found.group("name"), frame.package
    version = exact_version(log, package)
    rows = _fits(optional_imports.guarded(package, frame.module_path, name), version)
    if not rows:
        return versioned_name(name, frame, m, log)
    row = rows[0]
    dist = distribution(row.provider)
    if optional_imports.base_requirement(package, dist):
        return None  # always installed with the package: the guard tests something else
    fix, why = install_line(package, dist, version)
    guard = f"{row.guard}()" if row.guard.startswith("is_") else f"an import under {row.guard}"
    span = f"{row.releases[0]}–{row.releases[-1]}" if len(row.releases) > 1 else row.releases[0]
    at = frame.at
    what = (
        f"{dist} is not installed (or cannot be imported) in the environment that ran: {package}'s "
        f"{row.module} imports {name} from {row.provider} only when {guard} holds ({package} {span}), and "
        f"{package}'s {frame.function or 'code'} ({at}) uses it: the run needs {dist}"
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        module=row.provider,
        distribution=dist,
        package=package,
        guard=row.guard,
        requirement=why or None,
        located_by="the optional-import index (rules/knowledge/optional_imports.json.gz)",
    )
    return at_severity(d, Severity.ERROR)


#: names too common to tell a package by (a module's own helpers share them)
_MIN_NAME = 6


def _defining(h: symbol_history.History, name: str, where: list[str]) -> list[str]:
    """The public modules of ``h`` (no ``_``-part: not a vendored copy) that define ``name``."""
    return sorted(
        (w for w in where if h.defines(w, name) and not any(p.startswith("_") for p in w.split("."))),
        key=lambda w: (w.count("."), w),
    )


def _runs(bits: int, n: int) -> list[tuple[int, int]]:
    out, i = [], 0
    while i < n:
        if bits >> i & 1:
            j = i
            while j + 1 < n and bits >> (j + 1) & 1:
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def versioned_name(name: str, frame: Frame | None, m: Match, log: Log) -> Draft | None:
    """TRI013 for a ``NameError`` on a name that one package Q of the symbol history defines only in
    some of its releases, raised outside Q's own code (the user's, another package's, or a line
    with no frame): the code imported it under a guard (``try: from flash_attn import
    flash_attn_varlen_func`` / ``except ImportError: pass``) and the import failed: Q is absent, or
    its release lacks the name. The answer: Q's releases that have it, and which way to move. A
    warning (the code may never have imported it), an error where the log's release of Q lacks it.
    Quiet where no package, or several, define the name in some releases only, or Q's own frame
    raised it, or the raising package binds the name itself (a bug of its release: TRI014's)."""
    if len(name) < _MIN_NAME or name in dir(builtins):
        return None
    own = symbol_history.history(frame.package) if frame is not None and frame.package else None
    if own is not None and own.name_anywhere(name)[0]:
        return None  # the raising package binds the name itself: its release's bug (TRI014's)
    found = []
    for pkg in symbol_history.packages():
        h = symbol_history.history(pkg)
        if h is None:
            continue
        have, where = h.name_anywhere(name)
        defining = _defining(h, name, where) if have else []
        if defining:
            found.append((h, have, defining))
    if len(found) != 1:
        return None  # no package's name (the code's own), or several define it (vllm's SamplingParams)
    h, have, defining = found[0]
    if have == h.full:
        return None  # every release has it: no release's lack to tell
    if frame is not None and frame.package == h.package:
        return None  # Q's own code: its release's bug, not a failed import of it
    runs = _runs(have, len(h.releases))
    rel = h.releases
    ranges = ", ".join(rel[a] if a == b else f"{rel[a]}–{rel[b]}" for a, b in runs)
    a, b = runs[-1]
    module = defining[0]
    parts = []
    if a > 0:
        parts.append(f">={rel[a]}")
    if b < len(rel) - 1:
        parts.append(f"<{rel[b + 1]}")
    spec = ",".join(parts)
    top = module.split(".")[0]
    if b < len(rel) - 1 and a > 0:
        direction = f"install a {h.package} release that has it ({spec}: removed in {rel[b + 1]})"
    elif b < len(rel) - 1:
        direction = f"pin {h.package} below {rel[b + 1]}, the release that removed it"
    else:
        direction = f"install or upgrade {h.package} to {rel[a]} or newer, the first release that has it"
    version = exact_version(log, h.package)
    lacks = has = False
    if version is not None:
        within = [i for i, r in enumerate(rel) if versions.at_least(version, r)]
        known = bool(within) and not versions.below(rel[-1], version)
        lacks = known and not have >> within[-1] & 1
        has = known and bool(have >> within[-1] & 1)
    at = f"{frame.function or 'code'} ({frame.at})" if frame is not None else "the code (no frame shown)"
    who = f"{frame.package}'s {at}" if frame is not None and frame.package else at
    what = (
        f"'{name}' is {h.package}'s ({module}), and only some {h.package} releases have it ({ranges}; "
        f"{len(rel)} releases read): {who} uses it unbound, as code does that imports it under a guard "
        f"(try: from {top} import {name} / except ImportError) when the import failed — {h.package} is "
        f"not installed in the environment that ran, or its release lacks the name"
        + (f"; the log's {h.package} {version} lacks it" if lacks else "")
        + (
            f"; the log's {h.package} {version} has it: where that is the environment that ran, the "
            f"guarded import failed for another reason (a broken build's own ImportError), or the code "
            f"never imported {name} (a missing import line, a typo)"
            if has
            else ""
        )
    )
    check = f"python -c 'from {module} import {name}'"
    fix = (
        f"{check} in the run's environment: its error is why the guarded import failed; where it "
        f"imports cleanly, add the import of {name} the code lacks"
        if has
        else f"install {h.package} at the release the code's requirements name (the log shows no "
        f"{h.package}: most often none is installed); only {ranges} have '{name}' by that name, yet "
        f"code often binds it from a newer release's name (from {top} import … as {name}), so no pin "
        f"below {rel[b + 1]} is implied; check with {check}"
        if version is None and b < len(rel) - 1
        else f"pip install '{h.package}{spec}' ({direction}); check with {check}"
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        module=module,
        distribution=h.package,
        name=name,
        located_by="the symbol history (rules/knowledge/symbols/)",
    )
    return at_severity(d, Severity.ERROR if lacks else Severity.WARNING)
