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

import re

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.knowledge import optional_imports
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
    if found is None or frame is None or frame.package is None:
        return None  # the user's code, or no frame to place the name in
    name, package = found.group("name"), frame.package
    version = exact_version(log, package)
    rows = _fits(optional_imports.guarded(package, frame.module_path, name), version)
    if not rows:
        return None
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
