"""A package's compiled part that does not load (TRI041; a build for another torch is TRI005).

``No module named 'vllm._C'`` (or ``'flash_attn_2_cuda'``, ``'xformers._C'`` …: a compiled module of
a package that ships them, ``structclass.COMPILED``) raised where the package itself is installed:
the package's Python files are there, its compiled modules are not — a platform the package
publishes no build for (vLLM on Windows: ``rules/knowledge/compiled_parts.yaml``), a build that
failed or was skipped, a wheel made for another Python. A dotted name is itself the evidence that
the package imported (Python names the submodule only once its parent loaded). An error where the
traceback shows the installed package's own frames; a warning where only the module's name is
shown. A source checkout that shadows the installed build is TRI024 (``structclass.source_tree``,
before this).

The data's ``companions`` (torchvision / torchaudio / torchcodec per torch release) give TRI005's
fix the release of such a library that loads with the torch the log shows.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.structclass import COMPILED, INSTALLED, NO_MODULE, TOP_LEVEL, top_package
from envdoctor.triage.traceback import PACKAGES
from envdoctor.triage.traceback_model import Frame, Traceback

RULE = "TRI041"
#: compiled modules by their builds' naming (``vllm._moe_C``, ``xformers._C_flashattention``)
_COMPILED_NAME = re.compile(r"^_C(?:_\w{1,80})?$|^_\w{1,80}_C$")
#: a Windows path: a drive, the user's folder, an install folder with backslashes
_WINDOWS = re.compile(r"^[A-Za-z]:\\|^~\\|\\(?:site|dist)-packages\\|\\AppData\\")
#: modules of ``COMPILED`` that are Python files (a checkout has them; an installed build too)
_PYTHON_MODULES = frozenset({"_custom_ops", "ops", "cextension"})
_MACOS = re.compile(r"^/Users/|/Library/Frameworks/Python\.framework/")


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    """``rules/knowledge/compiled_parts.yaml``, read when a log needs it."""
    from envdoctor.resources import read_yaml, rules_dir

    return read_yaml(rules_dir() / "knowledge" / "compiled_parts.yaml") or {}


def companion(dist: str, torch_version: str) -> str | None:
    """The release of a PyTorch domain library (torchvision, torchaudio, torchcodec) built for
    ``torch_version``'s minor release, or None where the data does not have it."""
    minor = ".".join(torch_version.split("+", 1)[0].split(".")[:2])
    row = (data().get("companions") or {}).get(dist) or {}
    found = row.get(minor)
    return str(found) if found else None


def _platform(frames: list[Frame], text: str) -> str:
    """``windows`` / ``macos`` where the frames' paths (or the failing line) show it, else ''."""
    paths = [f.path for f in frames] + [text]
    if any(_WINDOWS.search(p) for p in paths):
        return "windows"
    if any(_MACOS.search(p) for p in paths):
        return "macos"
    return ""


def _compiled(module: str) -> tuple[str, str] | None:
    """(the package's import name, the compiled module's name) for a compiled module, or None."""
    top = TOP_LEVEL.get(top_package(module), top_package(module))
    last = module.rsplit(".", 1)[-1]
    if top in COMPILED and last in COMPILED[top] and last not in _PYTHON_MODULES:
        return top, last
    if "." in module and _COMPILED_NAME.match(last) and top in PACKAGES:
        return top, last
    if top == "deepspeed" and module.startswith("deepspeed.ops.") and last.endswith("_op"):
        return top, last  # a prebuilt DeepSpeed op (op_builder's absolute_name: ….cpu_adam_op)
    return None


def _message(t: Traceback) -> str:
    msg = t.message.strip()
    if t.name == "NameError":  # vLLM's _custom_ops: "… (Caught error: No module named 'vllm._C')"
        caught = re.search(r"\(Caught error: (?P<msg>No module named '[\w.]{1,300}')\)", msg)
        return caught.group("msg") if caught else ""
    return msg if t.name in ("ImportError", "ModuleNotFoundError") else ""


def missing_part(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI041 for a compiled module of an installed package that is not there (module docstring)."""
    if warning_line(m):
        return None
    found = NO_MODULE.search(_message(t))
    if found is None:
        return None
    module = found.group("module")
    part = _compiled(module)
    if part is None:
        return None
    from envdoctor.triage.missing import exact_version, went_on

    if went_on(log, m.line_no):
        return None  # training steps after it: an optional extension the run went on without
    top, name = part
    dist = PACKAGES.get(top, top)
    frames = [f for x in t.all() for f in x.frames]
    own = [f for f in frames if f.package == dist and any(p in f.path for p in INSTALLED)]
    if not own and any(f.package == dist for f in frames):
        return None  # the package's frames outside every install folder: a checkout (TRI024's)
    version = exact_version(log, dist)
    at = f"{dist} {version}" if version else dist
    where = f", imported by {dist}'s own code ({own[-1].at})" if own else ""
    platform = _platform(frames, m.text)
    no_build = (data().get("no_builds") or {}).get(dist) or {}
    if platform and platform in (no_build.get("platforms") or ()):
        system = "Windows" if platform == "windows" else "macOS"
        what = (
            f"{dist}'s compiled module {module} is not there{where}: {dist} publishes no build for "
            f"{system}, which the log's paths show, so an install there holds its Python files without "
            "the compiled part its code imports"
        )
        fix = str(no_build.get("instead", "")).strip()
        d = finding(RULE, [m], log, what, fix, package=dist, module=module, platform=platform)
        return at_severity(d, Severity.ERROR)
    shown = (
        f"{dist}'s own code imports it, {own[-1].at}"
        if own
        else f"{dist}'s Python files are there, its compiled module is not"
        if "." in module
        else f"it is {dist}'s compiled module, imported by {dist}'s own code"
    )
    what = (
        f"{at} is installed without its compiled module {module} ({shown}): the install did not finish "
        "(a build that failed or was skipped), or the build is for another platform or Python (its "
        "file names another cpython-3XX), so the package cannot load"
    )
    pin = f"=={version}" if version else ""
    if dist == "flash-attn":
        fix = (
            f"reinstall flash-attn built for this Python, torch and CUDA (python -V; its wheel names "
            f"them: …cp3XX…torch2.X…): pip install --force-reinstall --no-deps --no-build-isolation "
            f"flash-attn{pin}, or run under the Python its wheel was built for"
        )
    else:
        fix = (
            f"reinstall a complete build of {dist} for this platform and Python: pip install "
            f"--force-reinstall --no-deps {dist}{pin} (on Linux with a supported Python, a wheel "
            f"holds {module}; a build from source must finish compiling)"
        )
    d = finding(RULE, [m], log, what, fix, package=dist, module=module)
    return at_severity(d, Severity.ERROR if own else Severity.WARNING)
