"""A top-level module that is not installed in the environment that ran (TRI013).

``ModuleNotFoundError: No module named 'X'`` (Python 2's ``ImportError: No module named X``) where
X has no dot is the distribution that provides X missing from the environment that ran the import:
a dependency never installed, or a worker process (a Ray actor, a vLLM worker, vLLM's EngineCore)
started from another environment (a Ray ``runtime_env``, another venv) that lacks it. A module
*inside* a package (``vllm.x.y``) is API drift or a broken install (``boundary.py``), not this.

Quiet where the name is not a distribution to install: a module of the stack that envdoctor's own
install advice answers (``install_advice`` of rules/knowledge/import_names.yaml: trl, vllm, torch,
the RL stacks), a repository's own module (a frame's file or folder of that name, or a name such as
``utils``: ``local_names``), an import that was handled (an exception raised while handling it
that is not about importing, or training steps logged after it), and a module of Python's own
library (``resource`` on Windows: the platform lacks it, no pip install gives it). The
distribution to install: the table's row for the import name (cv2 → opencv-python), else the
name with ``_`` as ``-``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge import knowledge, optional_imports
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

RULE = "TRI013"
#: a package's own availability check naming what to install ("Unsloth: Please install vLLM before
#: enabling `fast_inference`", TRL's "vLLM is not available and `use_vllm` is set to True. Please install
#: vLLM with `pip install vllm`", "requires the protobuf library but it was not found", "Liger Kernel is
#: not available. Please install it with `pip install liger-kernel`")
_PIP = re.compile(
    r"\bpip install (?:(?:-U|--upgrade|-q|--quiet) )*[`'\"]?(?P<req>[A-Za-z][\w.-]{0,60}(?:\[[\w,-]{1,60}\])?"
    r"(?:(?:[<>=!~]=?|==)[\w.*+-]{1,30}(?:,(?:[<>=!~]=?)[\w.*+-]{1,30}){0,3})?)"
)
_ASKED = (
    re.compile(r"\b(?i:please install) (?:the )?[`'\"]?(?P<name>[A-Za-z][\w.-]{0,40}(?: [A-Z][\w-]{0,20})?)"),
    re.compile(r"\brequires the (?P<name>[\w.-]{1,40}) library but it was not found"),
    re.compile(r"\bthe package (?P<name>[\w.-]{1,40}) seems to be not installed"),
    re.compile(
        r"(?:^|: )[`'\"]?(?P<name>[A-Za-z][\w.-]{0,40}(?: [A-Z][\w-]{0,20})?)[`'\"]? is not "
        r"(?:installed|available)\b"
    ),
)
_ASKED_TYPES = ("ImportError", "ModuleNotFoundError", "RuntimeError", "ValueError", "AssertionError")
#: the setting a refusal names as what needs the package ("before enabling `fast_inference`")
_SETTING = re.compile(
    r"`(?P<key>[a-z][a-z0-9_]{2,60})(?:=True)?`(?: is set to True| is True)|enabling `(?P<on>[a-z]\w{1,60})`"
)
_MISSING = re.compile(r"^No module named (?P<q>['\"]?)(?P<module>[A-Za-z_]\w{0,100})(?P=q)\s*$")
#: a process that is not the one the user launched: Ray's actors and workers, vLLM's processes
_WORKER_PREFIX = re.compile(
    r"^\s*\((?:(?P<name>[A-Za-z_]\w{0,80}(?:\.\w{1,80})?)(?: \w{1,20}=\w{1,40}){0,4} )?pid=\d{1,9}"
    r"(?:, ip=[\d.]{1,40})?\)|^\s*\((?P<raylet>raylet)\)"
)
_WORKER_PATHS = (
    "ray/_private/worker.py",
    "ray/_private/function_manager.py",
    "ray/actor.py",
    "vllm/v1/engine/core.py",
    "vllm/worker/",
    "vllm/v1/worker/",
    "vllm/executor/",
    "multiprocessing/process.py",
)
#: an exception raised while handling the import failure, that still is about the import
_STILL_IMPORT = ("ImportError", "ModuleNotFoundError", "RuntimeError", "OSError")


def _table() -> dict[str, Any]:
    return knowledge().import_names


def distribution(module: str) -> str:
    """The PyPI name that provides the top-level import ``module``."""
    rows = _table().get("distributions") or {}
    return str(rows.get(module) or module.replace("_", "-").lower())


def known_distribution(module: str) -> bool:
    """Whether the table names ``module``'s distribution (otherwise it is a guess from the name)."""
    return module in (_table().get("distributions") or {})


def _own_module(module: str, tb: Traceback) -> bool:
    """``module`` is the repository's own: a frame's file or folder of that name, or a name
    repositories give their own modules (``local_names``)."""
    if module in set(_table().get("local_names") or []):
        return True
    for t in tb.all():
        for f in t.frames:
            parts = f.path.replace("\\", "/").split("/")
            if module in parts[:-1] or parts[-1] == f"{module}.py":
                return True
    return False


def _worker(tb: Traceback, context: Sequence[str], text: str) -> str:
    """The worker process the import ran in, as the log shows it (its prefix or its frames), or ''."""
    for line in [*context[-12:], text]:
        m = _WORKER_PREFIX.match(line)
        if m is not None:
            return m.group("name") or "a Ray worker"
    for t in tb.all():
        for f in t.frames:
            path = f.path.replace("\\", "/")
            if any(p in path for p in _WORKER_PATHS):
                return "a vLLM worker" if "vllm/" in path else "a Ray worker"
    return ""


_DURING = "During handling of the above exception"
_EXC_LINE = re.compile(r"^(?:[\w.]{1,100}\.)?(?P<name>\w{1,100}(?:Error|Exception))(?::(?P<msg>.{0,300}))?$")


def _about_import(name: str, message: str) -> bool:
    return name in _STILL_IMPORT or "import" in message.lower()


def _handled(tb: Traceback, t: Traceback, log: Log, line_no: int) -> bool:
    """``t`` (``tb`` or an exception of its chain) was handled: an exception raised while handling
    it (``tb``, or the next one in the log after it) is about something else than importing."""
    if t is not tb:
        return not _about_import(tb.name, tb.message)
    if not log.head or line_no <= 0:
        return False
    from envdoctor.triage.scanner import clean, split_prefix

    lines = log.head[: 1 << 20].decode("utf-8", "replace").split("\n")[line_no : line_no + 60]
    bodies = [split_prefix(clean(x[:4096].encode()))[0].strip() for x in lines]
    if not any(b.startswith(_DURING) for b in bodies[:4]):
        return False
    for body in bodies:
        m = _EXC_LINE.match(body)
        if m is not None:
            return not _about_import(m.group("name"), m.group("msg") or "")
    return False


#: a training step logged after the import failure: the run went on without the module
_WENT_ON = re.compile(rb"'loss': |'train_runtime': |\btrain_loss\b|Training completed")


def went_on(log: Log, line_no: int) -> bool:
    """The log shows training steps after line ``line_no``: what it said did not end the run."""
    if not log.head or line_no <= 0:
        return False
    at = 0
    for _ in range(line_no):
        at = log.head.find(b"\n", at) + 1
        if at <= 0:
            return False
    return _WENT_ON.search(log.head, at) is not None


def bare(m: Match) -> Traceback | None:
    """The failing line "No module named 'x'" quoted without its exception's name (a pasted log,
    an issue's words) as the ``ModuleNotFoundError`` it is, or None."""
    from envdoctor.triage.scanner import split_prefix

    body = split_prefix(m.text)[0].strip()
    if _MISSING.match(body) is None:
        return None
    return Traceback(exc_type="ModuleNotFoundError", message=body, line_no=m.line_no)


def _stack_module(module: str, tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A package of the stack (vllm, deepspeed, …) not installed where the run imports it: the run
    needs it, or the package importing it does so although the run does not use it (an optional
    extra imported unconditionally, a bug of that release): a warning naming both."""
    importer = next((f for f in reversed(tb.frames) if f.path and not f.path.startswith("<")), None)
    if importer is not None and importer.package is None:
        return None  # the user's own import: the first exception's answer (a kernel not restarted …)
    who = f"{importer.package} ({importer.at})" if importer else ""
    what = (
        f"the module '{module}' is not installed in the environment that ran the import"
        + (f", imported by {who}" if who else "")
        + f": the run needs {module} there, or the code importing it does so although this run does not "
        f"use it (an optional extra imported at module level: a bug of that release)"
    )
    fix = (
        f"install {module} in that environment if the run uses it (its install advice: envdoctor check); if "
        f"the run does not use {module}, upgrade the package that imports it to a release that imports it "
        "only when used"
    )
    declared = _declared(importer, distribution(module), log)
    if declared:  # the importer lists it as an extra: the run uses that extra's feature
        what += f" ({declared[1]})"
        fix = (
            f"{declared[0]}, if the run uses {module}; if it does not, upgrade the package that imports it "
            "to a release that imports it only when used"
        )
    d = finding(RULE, [m], log, what, fix, module=module)
    f = d.finding
    d.finding = Finding(f.rule, Severity.WARNING, f.message, f.fix, f.evidence)
    return d


def exact_version(log: Log, package: str) -> str | None:
    """The release of ``package`` the log shows, or that its frames place it at; None for a range
    of releases (frames that fit several) or none."""
    v = log.versions.get(package)
    if v is None or v.how == "frames" and v.low and v.low != v.version:
        return None
    return v.version


def install_line(package: str, dist: str, version: str | None) -> tuple[str, str]:
    """What to install for ``dist`` where ``package`` (at ``version``) uses it: the pip command with
    the requirement the package declares, and where that requirement comes from."""
    found = optional_imports.requirement(package, dist, version)
    at = f"{package} {version}" if version else package
    if found is None:
        return (
            f"install the distribution that provides it ({dist}) at the release {at} supports (its "
            "documentation names it; pip show lists no requirement on it)",
            "",
        )
    req, extra = found
    spec = req.split(";")[0].strip()
    if version is None:  # the newest release read: the installed one may ask another range
        newest = optional_imports.releases_of(package)[-1:]
        at = f"{package} {newest[0]} (the newest release envdoctor read)" if newest else package
    why = f"{at}'s extra [{extra}] asks for {spec}" if extra else f"{at} requires {spec}"
    extra_cmd = (
        f"; or pip install '{package}[{extra}]" + (f"=={version}'" if version else "'") if extra else ""
    )
    return f"pip install '{spec}' ({why}){extra_cmd}", why


def _declared(importer: Any, dist: str, log: Log) -> tuple[str, str] | None:
    """The importing package's own requirement on ``dist`` (an extra or a base requirement of its
    release, rules/knowledge/optional_imports.json.gz): (the pip command, where it comes from)."""
    if importer is None or importer.package is None or importer.package == dist:
        return None
    if importer.package not in optional_imports.packages():
        return None
    fix, why = install_line(importer.package, dist, exact_version(log, importer.package))
    return (fix, why) if why else None


def not_installed(tb: Traceback, t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI013 for ``t`` (``tb`` itself or one of its chain), or None (module docstring)."""
    if t.name not in ("ModuleNotFoundError", "ImportError") or warning_line(m):
        return None
    found = _MISSING.match(t.message.strip())
    if found is None:
        return None
    module = found.group("module")
    if _own_module(module, tb):
        return None
    if module in set(_table().get("install_advice") or []):
        if _handled(tb, t, log, t.line_no or m.line_no) or went_on(log, m.line_no):
            return None
        return _stack_module(module, t, m, log)
    if module in sys.stdlib_module_names:
        return None  # Python's own (resource, fcntl: POSIX only): the platform, not a pip install
    if _handled(tb, t, log, t.line_no or m.line_no) or went_on(log, m.line_no):
        return None
    dist = distribution(module)
    importer = next((f for f in reversed(t.frames) if f.path and not f.path.startswith("<")), None)
    where = ""
    if importer is not None:
        who = importer.package or "your code"
        where = f", imported by {who} ({importer.at})"
    worker = _worker(tb, m.context, m.text)
    known = known_distribution(module) or _declared(importer, dist, log) is not None
    said = f"its distribution {dist}" if known else f"what provides it (on PyPI likely {dist})"
    what = (
        f"the module '{module}' is not installed in the environment that ran the import{where}: "
        f"{said} is missing there"
    )
    fix = f"pip install {dist} in the environment that runs the import"
    declared = _declared(importer, dist, log)
    if declared:  # the importing package's own requirement on it: the version it asks
        what += f" ({declared[1]})"
        fix = f"{declared[0]} in the environment that runs the import"
    elif not known:  # a name envdoctor's table lacks: the project's own install line decides
        fix = (
            f"install the distribution that provides '{module}' in the environment that runs the "
            f"import (the project's install instructions name it; often pip install {dist}, or an "
            "extra of the package that imports it)"
        )
    if importer is not None and importer.package == dist:
        # the package's own part (its compiled extension) is missing: a partial or broken install
        what = (
            f"{dist} cannot import its own module '{module}'{where}: the install of {dist} is partial "
            "or was built for another torch / Python"
        )
        fix = f"pip install --force-reinstall --no-deps {dist} (a build for the installed torch and Python)"
    elif worker:
        what += f"; it ran in a worker process ({worker}), whose environment is the one without it"
        what_dist = dist if known else f"the distribution that provides '{module}'"
        install = (
            f"pip install {dist}"
            if known  # a name the table lacks: a guess, said as one (the project's install line decides)
            else f"the project's install instructions name it; often pip install {dist}, or an extra "
            "of the package that imports it"
        )
        fix = (
            f"install {what_dist} where the worker runs: its environment (a Ray runtime_env's pip list, "
            f"the venv or image the workers start from, every node), not only the driver's ({install})"
        )
    d = finding(RULE, [m], log, what, fix, module=module, distribution=dist, worker=worker or None)
    f = d.finding  # the import failed and nothing handled it: the run stops here, an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def _asked_distribution(name: str) -> str | None:
    """The distribution a message names in words (``vLLM``, ``Liger Kernel``, ``flash_attn``), where
    envdoctor knows it as one: a package of the stack, a row of the import-name table, or a provider of
    the optional-import index; None for anything else (a word that is no package)."""
    from envdoctor.triage.traceback import PACKAGES

    key = name.strip().strip("`'\".").replace(" ", "_")
    rows = _table().get("distributions") or {}
    for cand in (key, key.lower(), key.lower().replace("-", "_")):
        if cand in PACKAGES:
            return PACKAGES[cand]
        if cand in rows:
            return str(rows[cand])
    dist = key.lower().replace("_", "-")
    known = set(PACKAGES.values()) | {str(v) for v in rows.values()}
    return dist if dist in known else None


def _import_name(dist: str) -> str:
    """The top-level module that ``dist`` installs (flashinfer-python: flashinfer; pyyaml: yaml),
    from the same tables that name a module's distribution."""
    from envdoctor.triage.traceback import PACKAGES

    rows = _table().get("distributions") or {}
    return next(
        (m for table in (PACKAGES, rows) for m, d in table.items() if d == dist), dist.replace("-", "_")
    )


def _raiser(t: Traceback, log: Log, text: str) -> tuple[str | None, str]:
    """The package whose check raised ``t`` and where: its innermost frame of a package, else the
    raise-site index's placement of the message, else a "Package: …" prefix of the message."""
    frame = next((f for f in reversed(t.frames) if f.package), None)
    if frame is not None:
        return frame.package, frame.at
    from envdoctor.triage.raisesites import locate_tb  # the index: read only for such a message

    placed = locate_tb(t, log)
    if placed is not None:
        return placed.package, ""
    prefix = re.match(r"(?P<who>[A-Za-z][\w-]{1,40}): ", text)
    return (_asked_distribution(prefix.group("who")) if prefix else None), ""


#: words after "pip install" in prose that name no package
_NOT_NAMES = frozenset({"the", "a", "an", "it", "them", "this", "these", "that", "latest", "with"})


def _named_twice(name: str, text: str) -> str | None:
    """``name`` as a distribution where the message names it also outside its ``pip install``
    (transformers' remote-code check: "requires the following packages that were not found in your
    environment: causal_conv1d. Run `pip install causal_conv1d`"): a package the message says is
    missing, not a word after "pip install" ("the latest version"); None otherwise."""
    if not re.fullmatch(r"[A-Za-z][\w.-]{1,60}", name) or name.lower() in _NOT_NAMES:
        return None
    named = re.findall(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text)
    return name.lower().replace("_", "-") if len(named) >= 2 else None


def _asked(text: str, raiser: str | None) -> tuple[str, str] | None:
    """The distribution the message asks for and the requirement it names ("" for none): the
    first ``pip install X`` of another package than the raiser (transformers' "pip install
    transformers[torch] or pip install 'accelerate>=0.26.0'" asks for accelerate; a name envdoctor
    does not know where the message also names it as missing), else the words ("Please install
    vLLM", "X is not available")."""
    for pip in _PIP.finditer(text):
        req = pip.group("req")
        base = re.split(r"[\[<>=!~]", req, maxsplit=1)[0]
        known = _asked_distribution(base)
        dist = known or (_named_twice(base, text) if raiser else None)
        if dist is not None and dist != raiser:  # an unknown name: install what the message says
            return dist, req if re.search(r"[<>=!~]", req) or known is None else ""
    for rx in _ASKED:
        for found in rx.finditer(text):
            dist = _asked_distribution(found.group("name"))
            if dist is not None and dist != raiser:
                return dist, ""
    return None


def asked_install(tb: Traceback, t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI013 for a package's own check that stops the run because a package it needs cannot be
    imported, naming it in words ("Please install vLLM", "X is not available", "pip install X"): that
    package is missing from the environment that ran, or its import fails there (a build for another
    torch or CUDA makes the check's import fail as if it were absent). Where the log shows that
    package installed at a release that meets the ask (pip's own lines), the process that raised did
    not see that install: a notebook kernel started before it, or another environment. An error: the
    check raised and nothing handled it. None where the name is no package envdoctor knows."""
    if t.name not in _ASKED_TYPES or warning_line(m):
        return None
    text = t.message.strip()
    if not re.search(r"(?i)install|not available|not found", text):
        return None
    if "pip install" not in text:  # the message's next lines may name what to install
        from envdoctor.triage.raisesites import message as continued

        text = continued(t, log).strip()
    raiser, where = _raiser(t, log, text)
    asked = _asked(text, raiser)
    if asked is None:
        return None
    dist, req = asked
    if _handled(tb, t, log, t.line_no or m.line_no) or went_on(log, m.line_no):
        return None
    setting = next((s.group("key") or s.group("on") for s in _SETTING.finditer(text)), None)
    at = f"{raiser} ({where})" if raiser and where else raiser or "a package of the run"
    latest = re.search(r"(?i)\b(?:latest|newer|minimum) version\b|>=", text) is not None
    shown = exact_version(log, dist)
    spec = req[len(re.split(r"[<>=!~]", req, maxsplit=1)[0]) :] if req else ""
    if shown and (not spec or versions.satisfies(shown, spec)):
        what = (
            f"{at} stops the run: it does not see {dist}, which the log shows installed ({dist} {shown}"
            + (f", which meets {spec}" if spec else "")
            + "): the process that raised was started before that install or upgrade (a notebook's "
            "kernel, a Python session that imported the stack before pip ran), or runs another "
            "environment than the one pip installed into"
        )
        fix = (
            "restart the kernel / runtime after the pip installs (and run the installs before any import "
            f"of the stack); where it still fails, run pip as `python -m pip` with the interpreter that "
            f"runs the training (`python -c 'import {_import_name(dist)}'` there shows if it sees it)"
        )
        d = finding(RULE, [m], log, what, fix, distribution=dist, raised_in=at, shown=shown)
        return at_severity(d, Severity.ERROR)
    what = (
        f"{at} stops the run: {dist} cannot be imported in the environment that ran it"
        + (" (or is older than it needs)" if latest else "")
        + ": it is not installed there, or its import fails there (a build for another torch, CUDA or "
        "Python makes a package's availability check see it as absent)"
        + (f"; `{setting}` is what needs it" if setting else "")
    )
    install = f"pip install {'-U ' if latest else ''}{dist} at the release {raiser or 'the run'} supports"
    if req:
        install = f"pip install '{req}' (the requirement the message names)"
    elif raiser and raiser in optional_imports.packages():
        line, why = install_line(raiser, dist, exact_version(log, raiser))
        if why:  # the raiser's own requirement on it, at its release
            install, what = line, what + f" ({why})"
    fix = (
        f"{install} in the environment that runs it; if {dist} is installed there, "
        f"`python -c 'import {_import_name(dist)}'` in that environment shows the error that keeps "
        "it from importing (reinstall the build for the installed torch)"
        + (f"; or turn `{setting}` off if the run does not need it" if setting else "")
    )
    d = finding(RULE, [m], log, what, fix, distribution=dist, raised_in=at, setting=setting)
    return at_severity(d, Severity.ERROR)
