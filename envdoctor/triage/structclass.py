"""Classes of failure told by a traceback's structure, not by a signature written for one thread.

Each reads the failing exception's frames (which package raised, from which path), its message's
shape, and the versions the log shows, and is an error only where the cause does not hinge on a
version the log does not show:

1. **A Python older than a package's code** (TRI029): a package's own frame raising what only an
   interpreter older than a syntax or typing feature raises — ``unsupported operand type(s) for |:
   'type' and 'NoneType'`` (PEP 604 unions, evaluated at definition: Python 3.10), ``'type' object is
   not subscriptable`` on a line that subscripts a builtin (PEP 585 generics: Python 3.9), a
   ``SyntaxError`` in a package's file on a statement a later Python added (``match``: 3.10,
   ``except*``: 3.11, ``type X =`` / ``def f[T]``: 3.12). The Python that ran comes from the
   frames' paths (``…/python3.9/site-packages/…``) or the log's banner. Quiet for the user's own
   file (its code, not a package's) and where the log's Python has the feature.
2. **A name a package's release uses without binding it** (TRI014): ``NameError`` raised in a
   package's own frame on a name the package does not import under a guard (``optional.py`` owns
   those: the optional dependency is the fix), or in a module Unsloth generated
   (``unsloth_compiled_cache/Unsloth*.py``; its compiler's "Direct module loading failed for X:
   name 'Y' is not defined"): a bug of that release, fixed by upgrading it (for Unsloth: unsloth and
   unsloth_zoo, and the cache folder removed so it is generated again).
3. **A package imported from its source tree** (TRI024): a package that ships compiled extensions
   (``vllm._C``, ``flash_attn_2_cuda``, ``xformers._C`` …) imported from a folder that is not the
   installed build — its frames' paths outside ``site-packages`` / ``dist-packages``, or the
   message's own path — failing on the extension or on a circular import inside it: the run started
   inside the package's checkout, whose folder shadows the installed wheel.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import PACKAGES
from envdoctor.triage.traceback_model import Frame, Traceback

# -- 1. a Python older than the package's code -------------------------------------------------

#: the interpreter's version in a frame's path: ``/usr/lib/python3.8/``, ``python3.9/site-packages``
_PY_PATH = re.compile(r"/python3\.(?P<minor>\d{1,2})t?/")
#: the interpreter's version where a log prints it: ``Python 3.8.10``, ``Python version: 3.9.7``
_PY_BANNER = re.compile(
    r"(?:^|[\s(\[])Python(?: version)?:? {0,8}3\.(?P<minor>\d{1,2})\.\d{1,3}\b", re.MULTILINE
)
#: operands of ``|`` that Python 3.10 unions: a class, None, a generic alias
_UNION_OPERAND = r"'(?:type|NoneType|types\.GenericAlias|typing\._\w{1,40}|_GenericAlias|GenericAlias)'"
_PEP604 = re.compile(rf"^unsupported operand type\(s\) for \|: {_UNION_OPERAND} and {_UNION_OPERAND}")
_PEP585 = re.compile(r"^'type' object is not subscriptable")
#: a builtin subscripted as a generic (``list[str]``, ``dict[str, int]``) on the raising line
_BUILTIN_GENERIC = re.compile(r"(?<![\w.])(?:list|dict|tuple|set|frozenset|type)\[")
#: statements of a later Python, as the raising line of a SyntaxError shows them: (what, minimum)
_SYNTAX_FEATURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^\s*match\s+[^=]{1,200}:\s*(?:#.*)?$"), "the match statement (PEP 634)", "3.10"),
    (re.compile(r"^\s*case\s+[^=]{1,200}:"), "the match statement (PEP 634)", "3.10"),
    (re.compile(r"^\s*except\s*\*"), "except* (PEP 654)", "3.11"),
    (
        re.compile(r"^\s*type\s+[A-Za-z_]\w{0,60}(?:\[[^\]]{0,200}\])?\s*="),
        "the type statement (PEP 695)",
        "3.12",
    ),
    (
        re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+[A-Za-z_]\w{0,100}\["),
        "type parameters (PEP 695)",
        "3.12",
    ),
    (re.compile(r":="), "assignment expressions (PEP 572)", "3.8"),
)


def python_shown(t: Traceback, log: Log) -> str | None:
    """``3.9``: the Python the log shows — the failing traceback's frames' paths first, then the
    log's head (a path or a banner); None where it shows none or more than one."""
    seen = {m.group("minor") for x in t.all() for f in x.frames if (m := _PY_PATH.search(f.path))}
    if not seen and log.head:
        text = log.head[:262144].decode("utf-8", errors="replace")
        seen = {m.group("minor") for m in _PY_PATH.finditer(text)} or {
            m.group("minor") for m in _PY_BANNER.finditer(text)
        }
    return f"3.{seen.pop()}" if len(seen) == 1 else None


def _feature(t: Traceback) -> tuple[Frame, str, str] | None:
    """The raising frame of a package, the feature its line needs and that feature's Python."""
    frame = t.frames[-1] if t.frames else None
    if frame is None or frame.package is None:
        return None  # the user's code (or no frame): not a package's code
    msg = t.message.strip()
    if t.name == "TypeError" and _PEP604.match(msg):
        return frame, "union types written X | Y (PEP 604), evaluated where the package defines them", "3.10"
    if t.name == "TypeError" and _PEP585.match(msg) and _BUILTIN_GENERIC.search(frame.code):
        return frame, "builtin generics such as list[str] (PEP 585)", "3.9"
    if t.name in ("SyntaxError", "IndentationError"):
        for pattern, what, minimum in _SYNTAX_FEATURES:
            if pattern.search(frame.code):
                return frame, what, minimum
    return None


#: transformers' lazy import re-raising what importing one of its modules (or another package's, as
#: TRL's own lazy module does) raised: the message of the error follows on the next line
_LAZY = re.compile(
    r"^Failed to import (?P<module>[A-Za-z_][\w.]{0,200}) because of the following error "
    r"\(look up to see its traceback\):\s*(?P<inner>.*)$"
)


def _lazy_feature(t: Traceback, m: Match, log: Log) -> tuple[Frame, str, str] | None:
    """``_feature`` for a lazy import's re-raise without the inner traceback: the module it names
    is the place (its package's code, imported), the message after it (on its line or the next)
    the inner error."""
    lazy = _LAZY.match(t.message.strip())
    if lazy is None:
        return None
    inner = lazy.group("inner").strip()
    if not inner and log.head and m.line_no > 0:
        lines = log.head[:262144].decode("utf-8", errors="replace").split("\n")
        after = [x.strip() for x in lines[m.line_no : m.line_no + 3] if x.strip()]
        inner = after[0] if after else ""
    module = lazy.group("module")
    top = module.split(".")[0]
    package = PACKAGES.get(top, top.replace("_", "-"))
    path = module.replace(".", "/") + ".py"
    frame = Frame(package, path, path.split("/", 1)[-1], "<module>", 0)
    if _PEP604.match(inner):
        return frame, "union types written X | Y (PEP 604), evaluated where the package defines them", "3.10"
    if _PEP585.match(inner):
        return frame, "builtin generics such as list[str] (PEP 585)", "3.9"
    return None


#: the exception an inner message without its class name was raised as, from the message's shape
_INNER_TYPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^No module named '"), "ModuleNotFoundError"),
    (re.compile(r"^cannot import name '"), "ImportError"),
    (re.compile(r"^(?:module )?'[\w.]{1,200}'(?: object)? has no attribute '"), "AttributeError"),
    (
        re.compile(
            r"^(?:unsupported operand type\(s\)|'\w{1,100}' object is not subscriptable|[\w.]{1,200}\(\) "
            r"(?:got an unexpected keyword argument|missing \d{1,3} required|takes \d{1,3}))"
        ),
        "TypeError",
    ),
)
_NAMED_INNER = re.compile(r"^(?P<type>[A-Z]\w{0,100}(?:Error|Exception)): (?P<message>.+)$")


def _inner_exception(inner: str) -> tuple[str, str]:
    """(class, message) of a wrapped exception's text: its own ``XError: …`` name, else the class its
    message's shape implies (``_INNER_TYPES``), else ("", the text)."""
    named = _NAMED_INNER.match(inner)
    if named:
        return named.group("type"), named.group("message")
    return next((n for p, n in _INNER_TYPES if p.match(inner)), ""), inner


#: vLLM's executor re-raising a worker's failure with its message only
_WORKER = re.compile(
    r"^Worker failed with error '(?P<inner>.{1,2000})', please check the stack trace above for the root cause"
)


def worker_inner(t: Traceback) -> Traceback | None:
    """The failure vLLM's executor re-raises from a worker ("Worker failed with error 'LoRA rank 32
    is greater than max_lora_rank 16.', please check the stack trace above …") where the log shows
    its message only: raised in vLLM (its worker), its class from its own name or its message's
    shape, else the one vLLM's raise-site index gives its message (None where none tells)."""
    found = _WORKER.match(t.message.strip())
    if found is None or any(x.frames for x in t.chain):
        return None
    inner = found.group("inner").strip()
    exc_type, message = _inner_exception(inner)
    if not exc_type:  # the class the raise that prints it in vLLM's code raises, where one does
        from envdoctor.knowledge.raise_sites import locate

        kinds = {h.site.exc for h in locate(message, only=("vllm",))}
        exc_type = kinds.pop() if len(kinds) == 1 else ""
    return Traceback(exc_type=exc_type, message=message, line_no=t.line_no) if exc_type else None


def lazy_inner(t: Traceback, m: Match, log: Log) -> Traceback | None:
    """The exception a lazy import's re-raise ("Failed to import trl.trainer.grpo_trainer because of
    the following error (look up to see its traceback): No module named 'vllm'") wraps, where the log
    shows its message but not its traceback: raised importing the module named (a frame of that
    module's package), its class from its own name or its message's shape; None otherwise."""
    lazy = _LAZY.match(t.message.strip())
    if lazy is None or any(x.frames for x in t.chain):
        return worker_inner(t)
    inner = lazy.group("inner").strip()
    if not inner and log.head and m.line_no > 0:
        lines = log.head[:262144].decode("utf-8", errors="replace").split("\n")
        after = [x.strip() for x in lines[m.line_no : m.line_no + 3] if x.strip()]
        inner = after[0][:4096] if after else ""
    exc_type, message = _inner_exception(inner)
    if not exc_type:
        return None
    module = lazy.group("module")
    top = module.split(".")[0]
    path = module.replace(".", "/") + ".py"
    frame = Frame(PACKAGES.get(top, top.replace("_", "-")), path, path.split("/", 1)[-1], "<module>", 0)
    return Traceback(frames=[frame], exc_type=exc_type, message=message, line_no=t.line_no)


def _requires_python(package: str, version: str | None, log: Log) -> str | None:
    """``>=3.9``: the package release's Requires-Python where envdoctor's knowledge has it."""
    if package != "vllm" or not version:
        return None
    from envdoctor.knowledge import knowledge

    kb = log.ctx.kb if log.ctx is not None else knowledge()
    pin = next((p for p in kb.vllm.get("torch_pins") or [] if str(p.get("vllm")) == version), None)
    return str(pin.get("requires_python") or "") or None if pin else None


def python_older(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI029 for a package's code that needs a later Python than the one that ran (module
    docstring, 1), or None."""
    if warning_line(m):
        return None
    found = _feature(t) or (_lazy_feature(t, m, log) if not t.frames else None)
    if found is None:
        return None
    frame, what, minimum = found
    shown = python_shown(t, log)
    if shown is not None and not versions.below(shown, minimum):
        return None  # the log's Python has the feature: another cause
    pkg = frame.package or ""
    v = log.versions.get(pkg)
    pkg_version = v.version if v is not None and v.exact else None
    declared = _requires_python(pkg, pkg_version, log)
    at = frame.at
    ran = f"the log shows Python {shown}" if shown else "the log does not show which Python ran"
    named = f"{pkg} {pkg_version}" if pkg_version else pkg
    text = (
        f"{named}'s code needs Python {minimum} or later and ran on an older Python ({ran}): its "
        f"{frame.function or 'module'} ({at}) uses {what}, which an older interpreter "
        + ("cannot parse" if t.name in ("SyntaxError", "IndentationError") else "rejects with this error")
        + " — the interpreter is older than the package release, not a bug of your code"
        + (f"; {named} declares Requires-Python {declared}" if declared else "")
    )
    floor = re.search(r">=\s*(3\.\d{1,2})", declared or "")
    need = floor.group(1) if floor else minimum
    if versions.below(need, minimum):
        need = minimum
    fix = (
        f"run on Python {need} or later (a new environment: uv venv --python {need}, or conda create -n run "
        f"python={need}; then install the stack again there); or install a {pkg} release that still "
        f"supports Python {shown or 'the one you run'} (pip install '{pkg}<{pkg_version}' and read its "
        "Requires-Python)"
        if pkg_version
        else f"run on Python {need} or later (a new environment: uv venv --python {need}, or conda create -n "
        f"run python={need}; then install the stack again there); or install the older {pkg} release that "
        f"still supports your Python (its Requires-Python on PyPI)"
    )
    d = finding(
        "TRI029",
        [m],
        log,
        text,
        fix,
        package=pkg,
        python=shown,
        python_needed=minimum,
        feature=what,
        located_by="the raising frame's line and the interpreter in the frames' paths",
    )
    return at_severity(d, Severity.ERROR)


# -- 2. a name a package's release uses without binding it ----------------------------------------

_UNDEFINED = re.compile(r"^name '(?P<name>[A-Za-z_]\w{0,200})' is not defined")
_GENERATED_PATH = re.compile(r"unsloth_compiled_cache/(?P<module>Unsloth\w{1,80})\.py$")
#: unsloth_zoo's compiler reporting a generated module that does not import
_LOADING = re.compile(
    r"(?:Direct module loading|Standard import) failed for (?P<module>Unsloth\w{1,80}): "
    r"name '(?P<name>[A-Za-z_]\w{0,200})' is not defined"
)
_UNSLOTH_FIX = (
    "pip install --upgrade --force-reinstall --no-deps unsloth unsloth_zoo (the two together: "
    "unsloth_zoo's compiler writes the module), then delete the unsloth_compiled_cache folder beside "
    "the script (restart the runtime in Colab / Kaggle) so it is generated again; or pin trl / "
    "transformers to the releases your unsloth was written for"
)


def _generated(frame: Frame) -> str | None:
    g = _GENERATED_PATH.search(frame.path.replace("\\", "/"))
    return g.group("module") if g else None


def _fix_naming(package: str, name: str, log: Log) -> str:
    """`` (fixed in trl 0.17.0: 'import gather_object …')``: a later fix of ``package`` whose
    commit names ``name``, from the fix history; "" where none does."""
    from envdoctor.knowledge.fix_history import fix_history

    h = fix_history(package)
    if h is None or len(name) < 4:
        return ""
    v = log.versions.get(package)
    low = (v.low or v.version) if v is not None else None
    for f in h.subjects(re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")):
        if f.release and (low is None or versions.below(low, f.release)):
            return f" (a later fix names it: {package} {f.release}, “{f.subject[:120]}”)"
    return ""


def package_name_error(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI014 for a NameError in a package's own code or in code Unsloth generated (module
    docstring, 2), or None. After ``optional.undefined_name``: a name the package imports only
    when another package is installed is that package missing, not a bug."""
    if t.name != "NameError" or warning_line(m) or not t.frames:
        return None
    found = _UNDEFINED.match(t.message.strip())
    frame = t.frames[-1]
    if found is None:
        return None
    name = found.group("name")
    module = _generated(frame)
    if module is not None:
        return _generated_name(module, name, [m], log)
    pkg = frame.package
    if pkg is None:
        return None  # the user's code: its own name
    from envdoctor.knowledge import optional_imports

    v = log.versions.get(pkg)
    version = v.version if v is not None and v.exact else None
    read = optional_imports.releases_of(pkg)
    # the optional-import index read the package's releases: a name it does not list as guarded is
    # used unbound by the release itself; a package it did not read may guard the name
    known = bool(read) and (version is None or version in read or versions.below(read[-1], version) is False)
    # an installed build's file (a pasted path cut to the package could be a checkout's)
    known = known and any(x in frame.path for x in INSTALLED)
    at = frame.at
    named = f"{pkg} {version}" if version else pkg
    text = (
        f"a bug of {named}'s release: its own {frame.function or 'code'} ({at}) uses the name '{name}', "
        f"which that module never binds (an import the release left out) — not your code"
        + ("" if known else f" (unless {pkg} imports '{name}' only when an optional package is installed)")
    )
    fix = (
        f"pip install --upgrade '{pkg}' (a release that imports '{name}' where it uses it)"
        + _fix_naming(pkg, name, log)
        + f"; or pin the {pkg} release you ran before"
    )
    d = finding(
        "TRI014", [m], log, text, fix, package=pkg, name=name, matched="NameError in a package's own frame"
    )
    return at_severity(d, Severity.ERROR if known else Severity.WARNING)


def _generated_name(module: str, name: str, ms: Sequence[Match], log: Log) -> Draft:
    v = log.versions.get("unsloth")
    shown = f"; the log shows unsloth {v.version}" if v is not None and v.exact else ""
    text = (
        f"{module}.py, the module Unsloth generated into unsloth_compiled_cache (unsloth_zoo's compiler "
        f"rewrites the installed TRL / transformers code), uses the name '{name}' without importing it: a "
        f"bug of that Unsloth release's code generation for the installed TRL / transformers (or a cache "
        f"written by another release), not of your script{shown}"
    )
    d = finding(
        "TRI014",
        list(ms),
        log,
        text,
        _UNSLOTH_FIX,
        package="unsloth",
        generated=f"{module}.py",
        name=name,
        located_by="unsloth_compiled_cache",
    )
    return at_severity(d, Severity.ERROR)


def generated_loading(head: bytes, log: Log) -> Draft | None:
    """TRI014 for unsloth_zoo's compiler line "Direct module loading failed for X: name 'Y' is not
    defined" in the log's head, where no traceback named a cause."""
    if not head or b"is not defined" not in head or b"failed for Unsloth" not in head:
        return None
    from envdoctor.triage.signatures import signatures

    text = head.decode("utf-8", errors="replace")
    g = _LOADING.search(text)
    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if g is None or sig is None:
        return None
    line_no = text.count("\n", 0, g.start()) + 1
    lines = text.split("\n")
    m = Match(
        sig, line_no, lines[line_no - 1][:1000], {}, None, tuple(lines[max(0, line_no - 41) : line_no - 1])
    )
    return _generated_name(g.group("module"), g.group("name"), [m], log)


# -- 3. a package imported from its source tree ---------------------------------------------------

#: packages that ship compiled extensions, and their compiled modules (import names); a checkout
#: has the Python files but not the extensions its build compiles
COMPILED: dict[str, tuple[str, ...]] = {
    "vllm": (
        "_C",
        "_moe_C",
        "_rocm_C",
        "cumem_allocator",
        "vllm_flash_attn",
        "activation_ops",
        "_custom_ops",
    ),
    "flash_attn": ("flash_attn_2_cuda", "flash_attn_cuda"),
    "xformers": ("_C", "_C_flashattention"),
    "deepspeed": ("ops",),
    "bitsandbytes": ("cextension", "libbitsandbytes"),
    "apex": ("amp_C", "fused_layer_norm_cuda"),
    "mamba_ssm": ("selective_scan_cuda",),
    "causal_conv1d": ("causal_conv1d_cuda",),
    "flashinfer": ("_kernels",),
}
#: compiled modules installed at the top level beside their package (``flash_attn_2_cuda.so``)
TOP_LEVEL = {m: pkg for pkg, mods in COMPILED.items() for m in mods if m.endswith("_cuda")}
_PARTIAL = re.compile(
    r"cannot import name '(?P<name>\w{1,200})' from partially initialized module '(?P<module>[\w.]{1,300})'"
    r"(?:.{0,80}?\((?P<path>[^()]{1,1000})\))?$"
)
_FROM = re.compile(
    r"cannot import name '(?P<name>\w{1,200})' from '(?P<module>[\w.]{1,300})'"
    r"(?: \((?P<path>[^()]{1,1000})\))?"
)
NO_MODULE = re.compile(r"No module named '(?P<module>[\w.]{1,300})'")
INSTALLED = ("site-packages", "dist-packages", ".egg")


def top_package(module: str) -> str:
    return module.split(".", 1)[0]


def _outside(path: str) -> bool:
    """A path shown outside every install folder; an elided one (``.../transformers/__init__.py``,
    a poster's cut) tells nothing of where it lies."""
    p = path.replace("\\", "/")
    if p.startswith(("...", "\u2026")):
        return False
    return bool(p) and p[:1] in "/~." and not any(x in p for x in INSTALLED)


def source_tree(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI024 for a compiled-extension package imported from its checkout (module docstring, 3)."""
    if t.name not in ("ImportError", "ModuleNotFoundError", "NameError") or warning_line(m):
        return None
    msg = t.message.strip()
    if (
        t.name == "NameError"
    ):  # vLLM's _custom_ops: "name 'x' is not defined (Caught error: No module named 'vllm._C')"
        caught = re.search(r"\(Caught error: (?P<msg>No module named '[\w.]{1,300}')\)", msg)
        if caught is None:
            return None
        msg = caught.group("msg")
    g = _PARTIAL.search(msg) or _FROM.search(msg) or NO_MODULE.search(msg)
    if g is None:
        return None
    module = g.group("module")
    top = TOP_LEVEL.get(top_package(module), top_package(module))
    name = g.groupdict().get("name") or module.rsplit(".", 1)[-1]
    if top not in COMPILED:
        return None
    partial = msg.startswith("cannot import name") and "partially initialized" in msg
    ext = name in COMPILED[top] or module.rsplit(".", 1)[-1] in COMPILED[top]
    if not (partial or ext):
        return None
    path = g.groupdict().get("path") or ""
    dist = PACKAGES.get(top, top)
    own = [f for x in t.all() for f in x.frames if f.package == dist]
    outside = [f for f in own if _outside(f.path) and f"/{top}/" in f.path.replace("\\", "/")]
    inside = [f for f in own if any(x in f.path for x in INSTALLED)]
    if inside or (path and not _outside(path) and path != "unknown location"):
        return None  # the installed build raised it: a broken wheel, not a checkout
    where = outside[-1].path if outside else path if _outside(path) else ""
    if not where:
        return None
    folder = where.replace("\\", "/")
    folder = folder[: folder.rfind(f"/{top}/")] if f"/{top}/" in folder else folder
    what_failed = (
        f"a circular import inside {top} ({name} from the partially initialized {module})"
        if partial
        else f"{top}'s compiled module {name}, which a source checkout does not hold until it is built"
    )
    text = (
        f"{top} was imported from a source tree ({folder}/{top}), not from the installed build: the run "
        f"started inside {top}'s checkout (or with it on PYTHONPATH), whose folder shadows the installed "
        f"package, and the import failed on {what_failed}"
    )
    fix = (
        f"run from another directory (cd out of {folder}, or take it off PYTHONPATH / sys.path) so that "
        f"the installed {top} is imported; or build the checkout in place: pip install -e . in {folder} "
        f"(compiles {top}'s extensions)"
    )
    d = finding(
        "TRI024",
        [m],
        log,
        text,
        fix,
        package=top,
        source_tree=folder,
        module=module,
        located_by="frames outside site-packages",
    )
    return at_severity(d, Severity.ERROR)


# -- 4. a package of the stack shadowed by a folder of the user's code ---------------------------

_CANNOT_IMPORT = re.compile(
    r"cannot import name '(?P<name>\w{1,200})' from (?:partially initialized module )?'(?P<module>\w{1,100})'"
    r"(?: \(most likely due to a circular import\))?(?: \((?P<path>[^)]{1,500})\))?"
)
_NO_ATTRIBUTE = re.compile(
    r"(?:partially initialized )?module '(?P<module>\w{1,100})' has no attribute '(?P<name>\w{1,200})'"
)
_NOT_A_VERSION = re.compile(r"Invalid version: '?N/A'?")
_AVAILABLE = re.compile(r"is_(?P<name>\w{1,60})_available")
_PROBED = re.compile(r"_is_package_available\(\s*['\"](?P<name>\w{1,60})['\"]")
_EDITABLE = re.compile(rb"pip install (?:-e|--editable)\b|Obtaining file:|setup\.py develop|__editable__")


def _stack_names() -> dict[str, str]:
    from envdoctor.knowledge import knowledge

    names = knowledge().import_shadow.get("names") or {}
    return {str(k): str(v) for k, v in names.items()}


def _versioned(top: str) -> bool:
    """Every release of ``top`` sets a top-level ``__version__`` (import_shadow.yaml)."""
    from envdoctor.knowledge import knowledge

    return top in (knowledge().import_shadow.get("versioned") or ())


def _folder_frame(top: str, t: Traceback, m: Match, log: Log) -> str | None:
    """A path of the log's frames outside site-packages through a folder named ``top`` (or a
    module ``top.py``): the folder that shadows the package, as the log shows it."""
    for x in t.all():
        for f in x.frames:
            p = f.path.replace("\\", "/")
            if (
                p
                and not any(s in p for s in INSTALLED)
                and (f"/{top}/" in f"/{p}" or p.endswith(f"/{top}.py"))
            ):
                return p
    for line in (*m.context, m.text):
        if any(s in line for s in INSTALLED):
            continue
        g = re.search(rf"(?:^|[\s\"'/])({re.escape(top)}/[\w./-]{{1,300}}\.py)\"?, line \d+", line)
        if g:
            return g.group(1)
    return None


def _install_dir(shadow: str, top: str, t: Traceback) -> bool:
    """The folder holding ``shadow`` also holds another distribution's package that the frames
    show (``/home/work/.local/swift/…`` beside ``/home/work/.local/trl/``): a folder packages are
    installed into (pip --target), not the user's code."""
    p = shadow.replace("\\", "/")
    cut = p.rfind(f"/{top}/") if f"/{top}/" in p else p.rfind(f"/{top}.py")
    root = p[:cut] if cut > 0 else ""
    if not root:
        return False
    for x in t.all():
        for f in x.frames:
            fp = f.path.replace("\\", "/")
            if f.package and f.module_path and fp.endswith("/" + f.module_path):
                folder = fp[: -len(f.module_path) - 1]
                if folder.rsplit("/", 1)[0] == root:
                    return True
    return False


def _editable(log: Log, dist: str) -> bool:
    """The log shows ``dist`` installed from a checkout (``pip install -e``): a folder of that name
    is the package's own source. The editable line must name it (``Building editable for datasets``,
    ``__editable__.datasets-…``, ``Obtaining file:///…/datasets``), or the install that follows
    install it alone (``Successfully installed datasets-0.0.0``): another project's ``pip install -e
    .`` says nothing of a folder named like a package of the stack."""
    head = log.head or b""
    if not _EDITABLE.search(head):
        return False
    d = re.escape(dist.encode()).replace(rb"\-", rb"[-_]")
    return (
        re.search(
            rb"(?:(?:editable|develop) for |__editable__[._]+|Obtaining file:\S*[/\\])" + d + rb"\b"
            rb"|Successfully installed " + d + rb"-\S+[ \t]*$",
            head,
            re.M | re.I,
        )
        is not None
    )


def shadowed_by_folder(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI036: a folder (or module) of the user's code named like a package of the stack took
    its place on sys.path: an import of the package fails on a name the folder lacks, or an
    availability check takes the folder for a package not installed and reads 'N/A' as its
    version. Quiet where the log shows an editable install (the package's own checkout)."""
    if warning_line(m):
        return None
    names = _stack_names()
    msg = t.message.strip()
    if _NOT_A_VERSION.search(msg) or (t.name == "InvalidVersion" and "N/A" in msg):
        top = ""
        for x in t.all():
            for f in reversed(x.frames):
                g = _PROBED.search(f.code or "") or _AVAILABLE.search(f.function or "")
                if g and g.group("name") in names:
                    top = g.group("name")
                    break
            if top:
                break
        if not top or _editable(log, names[top]):
            return None
        text = (
            f"an availability check (is_{top}_available) found a folder or module named {top} on sys.path "
            f"while no {names[top]} distribution is installed, imported it and read its version as 'N/A': "
            f"a folder of the repository or the working directory (often one without __init__.py) is "
            f"taken for {top}"
        )
        fix = (
            f"rename the folder or module named {top} of your code (and its imports), or take its folder "
            f"off sys.path / PYTHONPATH (the script's folder, a sys.path.insert, the working directory for "
            f"python -m); or install {names[top]}"
        )
        return at_severity(
            finding("TRI036", [m], log, text, fix, package=top, located_by="availability check"),
            Severity.ERROR,
        )
    if t.name not in ("ImportError", "AttributeError"):
        return None
    g = _CANNOT_IMPORT.search(msg) if t.name == "ImportError" else _NO_ATTRIBUTE.search(msg)
    if g is None:
        return None
    if g.group("module") not in names:
        return _imports_itself(
            t, m, log, g.group("module"), g.group("name"), (g.groupdict().get("path") or "")
        )
    top, name = g.group("module"), g.group("name")
    if _editable(log, names[top]):
        return None
    path = (g.groupdict().get("path") or "").strip()
    if path and path != "unknown location" and not _outside(path):
        return None  # the installed package lacks the name: API drift, not this
    if source_tree(t, m, log) is not None:
        return None  # a compiled package's own checkout: TRI024
    own = [
        f
        for x in t.all()
        for f in x.frames
        if f.package == names[top] and any(s in f.path for s in INSTALLED)
    ]
    if own:
        return None
    if path and path != "unknown location" and _install_dir(path, top, t):
        return None
    if path == "unknown location":
        where = f"a folder named {top} without __init__.py (a namespace package; Python shows no file for it)"
    elif path:
        where = f"{path} (not the installed package's file)"
    elif name == "__version__" and _versioned(top):
        # no frame shows the folder (the package's importer reads the attribute), but no release lacks it
        where = (
            f"a folder named {top} without __init__.py, or with one that sets no __version__ (every "
            f"release of {names[top]} sets it)"
        )
    else:
        found = _folder_frame(top, t, m, log)
        if found is None or _install_dir(found, top, t):
            return None
        where = f"a folder named {top} of the user's code ({found} in the traceback)"
    text = (
        f"`{top}` resolved to the user's own code, not the installed {names[top]}: {where} lies on "
        f"sys.path before site-packages (the script's folder, the working directory, PYTHONPATH or a "
        f"runtime's working_dir), so the import of {name} from {top} fails"
    )
    fix = (
        f"rename the folder or module named {top} of your code (and its imports), or run from a "
        f"directory that does not hold it (take it off PYTHONPATH / sys.path / the job's working_dir)"
    )
    return at_severity(
        finding("TRI036", [m], log, text, fix, package=top, shadow=where, located_by="shadowing folder"),
        Severity.ERROR,
    )


def _imports_itself(t: Traceback, m: Match, log: Log, top: str, name: str, path: str) -> Draft | None:
    """TRI036 for any package: the user's own file named like the package it imports (a script
    ``trankit.py`` that runs ``from trankit import Pipeline``): the message names that very file as
    the partially initialized module, and the failing frame is in it. Certain whatever the package
    (no list of names needed): Python put the file's folder first and the file imports itself."""
    p = path.strip().replace("\\", "/")
    if not (_outside(p) or re.match(r"^[A-Za-z]:/", p)) or not (
        p.endswith(f"/{top}.py") or p.endswith(f"/{top}/__init__.py")
    ):
        return None
    frames = [f for x in t.all() for f in x.frames]
    if not frames or frames[-1].path.replace("\\", "/") != p:
        return None
    if not re.match(
        rf"\s*(?:from\s+{re.escape(top)}\s+import|import\s+{re.escape(top)}\b)", frames[-1].code or ""
    ):
        return None
    text = (
        f"`{top}` resolved to the user's own file {path}, which imports {top} itself: the file's folder "
        f"comes first on sys.path, so `from {top} import {name}` finds this half-run file, not a "
        f"package {top}"
    )
    fix = (
        f"if {top} is an installed package, rename {path} (and delete a __pycache__/{top}.*.pyc beside "
        f"it) so that it is not named like it; if {name} is meant to come from this file, drop the "
        f"import of itself"
    )
    return at_severity(
        finding(
            "TRI036", [m], log, text, fix, package=top, shadow=path, located_by="a file importing itself"
        ),
        Severity.ERROR,
    )
