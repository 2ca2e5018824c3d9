"""Two installations of the stack in one traceback: the package that failed was imported from an
installation the run was not meant to use (TRI037). Where only the facts show the two copies (the
log prints no paths), the finding is check's PKG013, in its words (``_from_facts``).

Python puts the user site (``~/.local/lib/pythonX.Y/site-packages``, PEP 370) on ``sys.path``
before the environment's own site-packages for any interpreter that is not an isolated venv (a
conda environment, a container's or the system's Python): a ``pip install --user`` copy of
triton, transformers or trl made once, for another project, is what every later run imports.
PYTHONPATH does the same for any folder, another Python's site-packages included. The traceback
shows it: its frames' (and the message's own) paths come from two installation roots, and the
failing frame, or the module the failing import names, lives in the one that does not belong.

The roots told apart (``root_of``), and the pairs that are two installations (``odd_pair``):

- the user site beside a root of any other kind (a venv, a conda environment, a container's or
  the system's Python) that holds a package of the stack — where the failure lies in the user
  site (set 17's verl container whose ~/.local triton lacked ``AttrsDescriptor``); beside a
  system's, a container's or a module's Python (not conda's), where pip install --user is how
  packages are added, only where the environment's import resolved into the user site (the path
  the message prints): a user-site frame failing on its own line may be the user's whole stack;
- two Python versions (``…/python3.10/site-packages`` and ``…/python3.11/site-packages``): one
  interpreter reading another's packages (PYTHONPATH, a ``.pth``);
- a conda base (``…/miniconda3/lib/pythonX.Y``) and one of its environments
  (``…/miniconda3/envs/NAME/lib/pythonX.Y``);
- a conda root and Debian's ``dist-packages`` (only Debian's own Python reads those), the failure
  in ``dist-packages`` (conda/conda-build#235).

Quiet: one root alone (a ``~/.local`` that is the user's whole environment), Debian's normal mix
(``/usr/lib/python3/dist-packages`` with ``/usr/local/lib/python3.X/dist-packages``: one Python),
Colab's (the same two), two venvs of one Python (Ray's per-actor environments, NeMo RL's), the
same environment reached through two mount points (``/home/u/anaconda3/envs/x`` and
``/media/u/anaconda3/envs/x``), editable installs and source checkouts (no site-packages path),
a failure whose frames and module all lie in the environment's own root, and failures that are
not an import's or an API's (a ValueError of the program's data is no installation's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import PACKAGES, package_of
from envdoctor.triage.traceback_model import Traceback

#: an installation root in a path: ``…/lib/python3.10/site-packages``, ``…/Lib/site-packages``
#: (Windows), Debian's ``/usr/lib/python3/dist-packages``; the Python's minor version where shown
_ROOT = re.compile(
    r"^(?P<root>.{0,600}?(?:/(?:lib|lib64|Lib)/python(?P<ver>[23](?:\.\d{1,2})?)t?|/Lib|"
    r"/Python3(?P<wminor>\d{1,2})|/Library/Python/(?P<mver>3\.\d{1,2})/lib/python)/(?:site|dist)-packages)(?:/|$)"
)
_USER = re.compile(
    r"(?:^|/)\.local/lib/python[23]\.\d{1,2}t?/site-packages$|/AppData/Roaming/Python/Python3\d{1,2}/site-packages$"
    r"|/Library/Python/3\.\d{1,2}/lib/python/site-packages$",  # macOS framework / Homebrew Python's user site
    re.I,
)
_CONDA = re.compile(
    r"(?:^|/)(?:ana|mini)conda\d?(?:/|$)|(?:^|/)(?:miniforge|mambaforge|micromamba)\d?(?:/|$)|^/opt/conda(?:/|$)"
    r"|/\.conda/|/envs/[^/]{1,200}/lib/python3",
    re.I,
)
_CONDA_BASE = re.compile(r"^(?P<prefix>.{1,600}?)/envs/[^/]{1,200}/lib/python3")
#: Debian's Python (the system's, a container's): its two folders are one installation
_DEBIAN = re.compile(r"^/usr/(?:local/)?lib/python[23](?:\.\d{1,2})?/dist-packages$")
#: the exceptions an installation's mismatch raises: an import, an attribute of a module or an
#: object, a call's shape, a compiled extension's missing symbol
_KINDS = ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "OSError")
_CALL_SHAPE = re.compile(
    r"unexpected keyword argument|required (?:positional|keyword-only) argument|positional arguments? but"
)
#: the path an ImportError prints after the module (``… from 'x' (/path/x/__init__.py)``), or a
#: compiled extension's (``/path/x/_C.so: undefined symbol: …``)
_OBJECT = re.compile(
    r"^(?:module|type object) '[\w.]{1,200}' has no attribute"
    r"|^'(?P<cls>[A-Z]\w{0,100})' object has no attribute"
)
_BUILTIN = {"NoneType", "Tensor"}
_MSG_PATH = re.compile(r"\((?P<p>/[^()\s]{1,1000}\.py)\)|(?P<so>/[^\s:'\"]{1,1000}\.so(?:\.\d+)*):")


@dataclass(frozen=True)
class Root:
    """One installation root as the log shows it."""

    path: str  # ``/root/.local/lib/python3.10/site-packages``
    minor: str | None  # ``3.10``; None where the path does not say (Debian's ``python3``)
    user: bool  # the user site (PEP 370)
    conda: bool
    debian: bool

    @property
    def python(self) -> str:
        return self.minor or ""

    def identity(self) -> str:
        """What makes two roots one installation: Debian's two folders are one; the same
        environment reached through two mount points keeps its last four components."""
        if self.debian:
            return "debian"
        parts = [x.lower() for x in self.path.split("/") if x]
        return "/".join(parts[-5:])


def root_of(path: str) -> Root | None:
    """The installation root of a file's path, or None (the user's code, a source checkout)."""
    p = path.replace("\\", "/")
    m = _ROOT.match(p)
    if m is None:
        return None
    root = m.group("root")
    ver = m.group("ver") or m.group("mver") or ""
    minor = ver if "." in ver else f"3.{m.group('wminor')}" if m.group("wminor") else None
    return Root(
        path=root,
        minor=minor,
        user=bool(_USER.search(root)),
        conda=bool(_CONDA.search(root)),
        debian=bool(_DEBIAN.match(root)),
    )


def _stack() -> set[str]:
    from envdoctor.knowledge import knowledge

    names = knowledge().import_shadow.get("names") or {}
    return set(PACKAGES.values()) | {str(v) for v in names.values()}


def odd_pair(odd: Root, other: Root) -> str | None:
    """Why ``odd`` and ``other`` are two installations where the failure lies in ``odd`` (a short
    phrase), or None where they are one installation or a normal mix."""
    if odd.debian and other.debian and (not odd.minor or not other.minor or odd.minor == other.minor):
        return None  # Debian's /usr/lib/python3/dist-packages with /usr/local/…/dist-packages: one Python
    if odd.identity() == other.identity() and not (odd.debian and other.debian):
        return None
    if odd.user and not other.user:
        return "user site"
    if odd.minor and other.minor and odd.minor != other.minor and not (odd.user or other.user):
        return "two pythons"
    for a, b in ((odd, other), (other, odd)):
        base = _CONDA_BASE.match(a.path)
        if base and b.conda and b.path.lower().startswith(base.group("prefix").lower() + "/lib/"):
            return "conda base"
    if odd.debian and other.conda:
        return "debian in conda"
    return None


@dataclass(frozen=True)
class Placed:
    """A file of the traceback: its distribution (or the module's top name) and its root."""

    package: str
    path: str
    root: Root
    from_message: bool = False  # the path the message prints (where the failing import resolved)


def _placed(t: Traceback) -> tuple[list[Placed], list[Placed]]:
    """Every file of the traceback under an installation root (frames oldest first, then the
    message's own path), and the failing ones: the innermost package frame and the message's path."""
    every: list[Placed] = []
    for x in t.all():
        for f in x.frames:
            r = root_of(f.path)
            if r is not None and f.package:
                every.append(Placed(f.package, f.path, r))
    failing: list[Placed] = []
    innermost = next((f for f in reversed(t.frames) if f.package), None)
    if innermost is not None and (r := root_of(innermost.path)) is not None:
        failing.append(Placed(str(innermost.package), innermost.path, r))
    m = _MSG_PATH.search(t.message[:4000])
    if m is not None:
        p = m.group("p") or m.group("so") or ""
        r = root_of(p)
        pkg, _ = package_of(p)
        if r is not None and pkg:
            placed = Placed(pkg, p, r, from_message=True)
            failing.append(placed)
            every.append(placed)
    return every, failing


def _applies(t: Traceback) -> bool:
    if t.name not in _KINDS:
        return False
    if t.name == "TypeError":
        return bool(_CALL_SHAPE.search(t.message))
    if t.name == "OSError":
        return "undefined symbol" in t.message
    if t.name == "AttributeError":  # a module's or a class's member: not a None's or a tensor's
        a = _OBJECT.match(t.message.strip())
        return a is not None and a.group("cls") not in _BUILTIN
    return True


def two_roots(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI037 (module docstring)."""
    if not _applies(t) or warning_line(m):
        return None
    every, failing = _placed(t)
    if not failing or len({p.root.path.lower() for p in every}) < 2:
        return _from_facts(t, m, log)
    stack = _stack()
    for bad in failing:
        for good in reversed(every):  # the nearest frame of the other root: the code that called
            why = odd_pair(bad.root, good.root)
            if why is None:
                continue
            if why == "user site" and good.package not in stack:
                continue  # Debian's apt packages beside a user's own stack: one environment
            if why == "user site" and not good.root.conda and not bad.from_message:
                # a system's or a module's Python (not conda's): pip install --user is how its
                # users add packages, so a user-site frame failing on its own line may be the
                # user's whole stack; only an import the environment's code made, resolved into
                # the user site (the path the message prints), shows a copy hiding its own
                continue
            if bad.package not in stack and t.name in ("TypeError", "AttributeError"):
                continue  # a call or an attribute of the user's own package: its code, not its copy
            return _draft(t, m, log, bad, good, why)
    return None


#: the module a failing import or attribute names: ``from 'triton.compiler.compiler'``, ``No module
#: named 'vllm._C'``, ``module 'torch.cuda' has no attribute``
_NAMED = re.compile(
    r"from '(?P<a>[\w.]{1,300})'|No module named '(?P<b>[\w.]{1,300})'|^module '(?P<c>[\w.]{1,300})'"
)


def _from_facts(t: Traceback, m: Match, log: Log) -> Draft | None:
    """Where the log shows no paths but the facts it is judged against (this machine, or
    ``--facts``) do: the package the failure names is installed twice there, at two versions, and
    the copy Python imports is the user site's or a PYTHONPATH entry's (``Package.other_copies``):
    that is check's PKG013, said with its id, text and fix (checks/import_shadow.installed_twice),
    not a second text of TRI037's."""
    if log.ctx is None or t.name not in ("ImportError", "ModuleNotFoundError", "AttributeError"):
        return None
    g = _NAMED.search(t.message.strip())
    names = [x for x in (g.group("a") or g.group("b") or g.group("c"),) if x] if g else []
    innermost = next((f.package for f in reversed(t.frames) if f.package), None)
    dists = [PACKAGES.get(n.split(".")[0], n.split(".")[0].replace("_", "-")) for n in names]
    for dist in dict.fromkeys([*dists, *([innermost] if innermost else [])]):
        pkg = log.ctx.facts.packages.get(dist)
        other = pkg.shadowed() if pkg is not None else None
        if pkg is None or other is None:
            continue
        from envdoctor.checks.import_shadow import installed_twice

        machine = "this machine" if log.ctx.facts.live else f"the facts given ({log.ctx.facts.source})"
        what, fix = installed_twice(dist, pkg, other)  # PKG013's own text: one failure, one text
        d = finding(
            "PKG013",
            [m],
            log,
            what,
            fix,
            package=dist,
            imported=pkg.version,
            imported_from=pkg.path,
            imported_kind=pkg.path_kind,
            other=other.version,
            other_path=other.path,
            located_by=f"the copies of the package on {machine}",
        )
        return at_severity(d, Severity.ERROR)
    return None


def _draft(t: Traceback, m: Match, log: Log, bad: Placed, good: Placed, why: str) -> Draft:
    pkg = bad.package
    top = pkg.replace("-", "_")
    if why == "user site":
        py = bad.root.python or "3"
        what = (
            f"two installations of the stack: {pkg} was imported from the user site {bad.root.path} "
            f"(a pip install --user copy), while {good.package} comes from {good.root.path}; Python "
            f"puts the user site before the environment's site-packages (any interpreter but an "
            f"isolated venv: a conda environment, a container's or the system's Python), so that copy "
            f"of {pkg}, installed for something else, is the one the run imports, and it does not fit "
            f"the rest of the environment"
        )
        fix = (
            f"run with PYTHONNOUSERSITE=1 (export it in the job script, or pass it into the container: "
            f"--env PYTHONNOUSERSITE=1), or `python -s`, so that only the environment's packages are "
            f"imported; or remove the user copy: python{py} -m pip uninstall {pkg} run outside any venv "
            f"with the user site on (it removes the first copy on sys.path, the user site's), or delete "
            f"{bad.root.path}/{top} and its {top}-*.dist-info"
        )
    elif why == "two pythons":
        what = (
            f"two Python installations in one run: {pkg} was imported from {bad.root.path} (Python "
            f"{bad.root.python}) while {good.package} comes from {good.root.path} (Python "
            f"{good.root.python}); one interpreter is reading another's site-packages (a PYTHONPATH "
            f"entry or a .pth file), whose {pkg} was built and installed for the other Python"
        )
        fix = (
            f"take {bad.root.path} off the run's path (unset PYTHONPATH or drop that entry; check the "
            f"site-packages' .pth files), and install {pkg} into the environment that runs: "
            f"python -m pip install {pkg} with that environment's python"
        )
    elif why == "conda base":
        what = (
            f"two conda installations in one run: {pkg} was imported from {bad.root.path} while "
            f"{good.package} comes from {good.root.path}: the base environment and an environment of "
            f"the same conda are both on the path (a PYTHONPATH entry, or the base's python running the "
            f"environment's code), and their {pkg} releases do not fit each other"
        )
        fix = (
            f"run with the environment's own python (conda activate it; `which python`), unset "
            f"PYTHONPATH, and install {pkg} into that environment (python -m pip install {pkg})"
        )
    else:  # debian in conda
        what = (
            f"two installations in one run: {pkg} was imported from Debian's {bad.root.path} while "
            f"{good.package} comes from the conda installation {good.root.path}; only Debian's own Python "
            f"reads dist-packages, so a PYTHONPATH entry or a .pth file put the system's packages on the "
            f"conda Python's path"
        )
        fix = (
            f"unset PYTHONPATH (or drop {bad.root.path} from it, and from any .pth file of the "
            f"environment), and install {pkg} into the conda environment (python -m pip install {pkg})"
        )
    d = finding(
        "TRI037",
        [m],
        log,
        what,
        fix,
        package=pkg,
        imported_from=bad.root.path,
        other_root=good.root.path,
        roots=why,
        located_by="installation roots of the traceback's paths",
    )
    return at_severity(d, Severity.ERROR)
