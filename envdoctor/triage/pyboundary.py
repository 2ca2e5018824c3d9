"""A standard-library name the run's Python does not have yet (TRI029, the Python boundary).

Code written for a later Python fails on an older one where it uses what that Python's standard
library lacks: ``ImportError: cannot import name 'Unpack' from 'typing' (…/lib/python3.9/typing.py)``,
``No module named 'tomllib'``, ``module 'functools' has no attribute 'cache'``, ``dataclass() got an
unexpected keyword argument 'slots'``, ``zip() takes no keyword arguments`` on ``zip(…, strict=True)``,
``'str' object has no attribute 'removeprefix'``. The first Python that has each module, name,
keyword and builtin method is data (``rules/knowledge/stdlib_versions.json``, derived from
python/typeshed's stubs by scripts/derive_stdlib_versions.py).

An error where the log shows the Python that ran (a frame's or the message's path
``lib/python3.N/``, a ``Python 3.N.M`` banner, a ``cpython-3N`` extension name) and it is older than
the name's; a warning where it shows none; quiet where the Python shown has the name (another
cause: a module of that name shadowing the standard library's, a name misspelt) or the message's own
path is a package's (``site-packages/typing.py``: the PyPI backport, not the standard library).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback_model import Frame, Traceback

SCHEMA = "envdoctor.stdlib_versions/1"
MAX_BYTES = 1 << 20
SOURCE = "rules/knowledge/stdlib_versions.json (python/typeshed's stdlib stubs)"
REFERENCE = "https://github.com/python/typeshed/blob/main/stdlib/VERSIONS"

_IMPORT = re.compile(
    r"^cannot import name '(?P<name>\w{1,200})' from '(?P<module>[\w.]{1,200})'"
    r"(?: \((?P<path>[^)]{1,1000})\))?"
)
_NO_MODULE = re.compile(r"^No module named '(?P<module>[\w.]{1,200})'")
_NO_ATTR = re.compile(r"^module '(?P<module>[\w.]{1,200})' has no attribute '(?P<name>\w{1,200})'")
_NO_MEMBER = re.compile(r"^'(?P<cls>\w{1,100})' object has no attribute '(?P<name>\w{1,200})'")
_KEYWORD = re.compile(r"^(?P<func>[\w.]{1,200})\(\) got an unexpected keyword argument '(?P<kw>\w{1,200})'")
_NO_KEYWORDS = re.compile(r"^(?P<func>[\w.]{1,200})\(\) takes no keyword arguments")
#: the interpreter's version in an extension's file name: ``_C.cpython-39-x86_64-linux-gnu.so``
_CPYTHON = re.compile(r"\bcpython-3(?P<minor>\d{1,2})-")
_PACKAGES = ("site-packages", "dist-packages")


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    """The standard library's versions (bounded read, schema checked), or {} without them."""
    from envdoctor.resources import rules_dir

    path = rules_dir() / "knowledge" / "stdlib_versions.json"
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) and doc.get("schema") == SCHEMA else {}


def _function(name: str, params: dict[str, dict[str, str]]) -> str | None:
    """The one function or class of the data that a message's ``f()`` names (``dataclass`` →
    ``dataclasses.dataclass``); None where none does or several do."""
    short = name.rsplit(".", 1)[-1]
    hits = [k for k in params if k.rsplit(".", 1)[-1] == short]
    if name in params:
        return name
    return hits[0] if len(hits) == 1 else None


def needed(t: Traceback) -> tuple[str, str] | None:
    """(what the code used, the first Python that has it) for an exception whose message names a
    standard-library module, name, keyword or builtin method newer than the data's floor."""
    doc = data()
    if not doc:
        return None
    msg, kind = t.message.strip(), t.name
    names: dict[str, dict[str, str]] = doc.get("names") or {}
    if kind in ("ImportError", "ModuleNotFoundError") and (m := _IMPORT.match(msg)):
        path = (m["path"] or "").replace("\\", "/")
        if any(p in path for p in _PACKAGES):
            return None  # a package's module of that name (the PyPI backport), not the standard library's
        v = names.get(m["module"], {}).get(m["name"])
        return (f"{m['module']}.{m['name']}", v) if v else None
    if kind in ("ModuleNotFoundError", "ImportError") and (m := _NO_MODULE.match(msg)):
        modules: dict[str, str] = doc.get("modules") or {}
        v = modules.get(m["module"])
        return (f"the module {m['module']}", v) if v else None
    if kind == "AttributeError" and (m := _NO_ATTR.match(msg)):
        v = names.get(m["module"], {}).get(m["name"])
        return (f"{m['module']}.{m['name']}", v) if v else None
    if kind == "AttributeError" and (m := _NO_MEMBER.match(msg)):
        v = (doc.get("members") or {}).get(m["cls"], {}).get(m["name"])
        return (f"{m['cls']}.{m['name']}()", v) if v else None
    if kind == "TypeError":
        params: dict[str, dict[str, str]] = doc.get("parameters") or {}
        if m := _KEYWORD.match(msg):
            key = _function(m["func"], params)
            v = params.get(key or "", {}).get(m["kw"])
            return (f"{key}(…, {m['kw']}=…)", v) if key and v else None
        if (m := _NO_KEYWORDS.match(msg)) and t.frames:
            key = _function(m["func"], params)
            code = t.frames[-1].code
            for kw, v in (params.get(key or "") or {}).items():
                if re.search(rf"\b{re.escape(kw)}\s*=(?!=)", code):
                    return f"{key}(…, {kw}=…)", v
    return None


def python_of(t: Traceback, log: Log) -> str | None:
    """``3.9``: the Python the log shows — ``structclass.python_shown``'s frames' paths and banner,
    else a ``cpython-3N`` extension name; None where none or several."""
    from envdoctor.triage.structclass import python_shown

    shown = python_shown(t, log)
    if shown is not None or not log.head:
        return shown
    text = log.head[:262144].decode("utf-8", errors="replace")
    seen = {m.group("minor") for m in _CPYTHON.finditer(text)}
    return f"3.{seen.pop()}" if len(seen) == 1 else None


def _raiser(t: Traceback) -> Frame | None:
    """The frame that used the name: the last of a package's or the user's code (not Python's own
    ``lib/python3.N/`` files)."""
    for f in reversed(t.frames):
        path = f.path.replace("\\", "/")
        if f.package is not None or not re.search(r"/lib/python3\.\d{1,2}t?/", path):
            return f
    return None


def _last_supporting(package: str, python: str, log: Log) -> str | None:
    """The latest release of ``package`` whose Requires-Python admits ``python``, where envdoctor
    knows Requires-Python per release (vLLM's torch pins); None otherwise."""
    if package != "vllm":
        return None
    from envdoctor.knowledge import knowledge

    kb = log.ctx.kb if log.ctx is not None else knowledge()
    best = None
    for pin in kb.vllm.get("torch_pins") or []:
        floor = re.search(r">=\s*(3\.\d{1,2})", str(pin.get("requires_python") or ""))
        release = str(pin.get("vllm") or "")
        admits = floor is not None and not versions.below(python, floor.group(1))
        if admits and release and (best is None or versions.below(best, release)):
            best = release
    return best


def stdlib_newer(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI029 for a standard-library name newer than the run's Python (module docstring), or None."""
    if warning_line(m):
        return None
    found = needed(t)
    if found is None:
        return None
    what, first = found
    shown = python_of(t, log)
    if shown is not None and not versions.below(shown, first):
        return None  # the log's Python has it: another cause
    frame = _raiser(t)
    pkg = frame.package if frame is not None else None
    v = log.versions.get(pkg) if pkg else None
    pkg_version = v.version if v is not None and v.exact else None
    named = f"{pkg} {pkg_version}" if pkg and pkg_version else pkg
    place = f" at {frame.at}" if frame is not None else ""
    who = f"{named}'s code{place}" if named else f"the code{place}" if frame is not None else "the code"
    ran = f"the log shows Python {shown}" if shown else "the log does not show which Python ran"
    text = (
        f"{who} uses {what}, which Python's standard library has from Python {first} on, and ran on an "
        f"older Python ({ran}): the interpreter is older than the code, not a bug of the code"
    )
    fix = (
        f"run on Python {first} or later (a new environment: uv venv --python {first}, or conda create "
        f"-n run python={first}; then install the stack again there)"
    )
    last = _last_supporting(pkg, shown, log) if pkg and shown else None
    if last:
        fix += f"; or {pkg}=={last}, its latest release whose Requires-Python admits Python {shown}"
    elif pkg and frame is not None and any(p in frame.path for p in _PACKAGES):
        fix += (
            f"; or an older {pkg} release whose Requires-Python admits Python {shown or 'the one you run'} "
            "(read it on the release's PyPI page)"
        )
    if what.startswith("typing."):
        fix += f"; or, where you can edit that line, import {what.split('.', 1)[1]} from typing_extensions"
    d = finding(
        "TRI029",
        [m],
        log,
        text,
        fix,
        package=pkg,
        python=shown,
        python_needed=first,
        stdlib_name=what,
        answer_from=SOURCE,
        references=[REFERENCE],
        located_by="the exception's message against the standard library's versions",
    )
    return at_severity(d, Severity.ERROR if shown else Severity.WARNING)
