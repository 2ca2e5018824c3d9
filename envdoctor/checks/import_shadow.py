"""PKG011, PKG012: a folder or module of the repository, on the run's import path, named like a
package of the stack (``envdoctor.plan.import_path``): ``import X`` finds it instead of the
installed package, or TRL's availability check takes it for a package that is not installed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.interface import normalize_name
from envdoctor.plan.import_path import Shadow, path_entries, shadows

_MANUAL = (
    "a folder of the repository and the imports that name it are the author's to rename: "
    "envdoctor does not move files"
)


def _found(ctx: Context) -> list[Shadow]:
    cached = ctx.options.get("_import_shadows")
    if isinstance(cached, list):
        return cached
    trainer = ctx.plan.trainer
    names: dict[str, Any] = ctx.kb.import_shadow.get("names") or {}
    got: list[Shadow] = []
    if trainer is not None and names:
        got = shadows(path_entries(trainer, ctx.facts.env, os.getcwd(), edited=ctx.plan.edited), names)
    ctx.options["_import_shadows"] = got
    return got


def _own_checkout(ctx: Context, dist: str, shadow: Shadow) -> bool:
    """The installed distribution was built from the folder that holds ``shadow`` (its PEP 610
    ``direct_url.json`` names a local folder that holds it): the package's own checkout."""
    pkg = ctx.facts.packages.get(normalize_name(dist))
    origin = pkg.origin if pkg else None
    if not origin or not origin.startswith("file:"):
        return False
    root = os.path.realpath(unquote(urlparse(origin).path))
    here = os.path.realpath(shadow.path)
    return here == root or here.startswith(root.rstrip(os.sep) + os.sep)


def _imports(ctx: Context, name: str) -> bool:
    """The training script imports ``name`` itself (``TrainingScript.packages``, read once by
    ``plan.script_reader``)."""
    script = ctx.plan.script
    return script is not None and name in script.packages


def _said(s: Shadow) -> str:
    what = {
        "package": "a package folder (with __init__.py)",
        "module": "a module",
        "namespace": "a folder without __init__.py (a namespace package)",
    }[s.kind]
    return f"`{s.path}` ({what}) lies in `{s.entry.shown}` on the run's import path ({s.entry.why})"


def _fix(s: Shadow) -> str:
    new = os.path.join(os.path.dirname(s.path), f"{s.name}_local" + (".py" if s.kind == "module" else ""))
    away = {
        "cwd": ", or run the script from a folder that does not hold it",
        "pythonpath": ", or take that folder off the path",
        "code": ", or take that folder off the path",
    }.get(s.entry.source, "")
    return f"Rename `{s.path}` (e.g. to `{new}`) and the imports of it in the repository{away}."


@rule("PKG011")
def package_shadowed_by_repository(ctx: Context) -> Iterator[Hit]:
    names: dict[str, Any] = ctx.kb.import_shadow.get("names") or {}
    always = set(ctx.kb.import_shadow.get("always_imported") or [])
    done: set[str] = set()
    for s in _found(ctx):
        if s.name in done:
            continue
        dist = str(names[s.name])
        installed = ctx.version(dist)
        if not s.entry.before_site or installed is None:
            continue  # after site-packages, or nothing installed to shadow (PKG012)
        if s.kind == "namespace":
            continue  # a namespace portion loses to the installed regular package later on the path
        done.add(s.name)
        if _own_checkout(ctx, dist, s):
            continue  # the package's own source, installed from this folder
        used = s.name in always or _imports(ctx, s.name) or (s.name == "vllm" and bool(ctx.plan.use_vllm))
        why = (
            "every GRPO run imports it"
            if s.name in always
            else "the run imports it"
            if used
            else "when the run imports it"
        )
        yield hit(
            f"{_said(s)}: Python imports it before site-packages, so `import {s.name}` gets the "
            f"repository's {s.kind} instead of the installed {dist} {installed} ({why}), and the "
            "run fails on the first name it lacks (ImportError, AttributeError, a circular import)",
            fix=_fix(s),
            severity="error" if used else "warning",
            package=dist,
            path=s.path,
            entry=s.entry.shown,
            manual=_MANUAL,
        )


@rule("PKG012")
def absent_package_taken_for_installed(ctx: Context) -> Iterator[Hit]:
    names: dict[str, Any] = ctx.kb.import_shadow.get("names") or {}
    probed: dict[str, Any] = ctx.kb.import_shadow.get("probed") or {}
    trl = ctx.version("trl")
    if trl is None:
        return
    done: set[str] = set()
    for s in _found(ctx):
        if s.name in done or s.name not in probed:
            continue
        dist = str(names[s.name])
        if ctx.version(dist) is not None or ctx.facts.unknown(dist):
            continue  # installed (PKG011 judges a shadow of it), or not known
        done.add(s.name)
        entry = probed[s.name]
        known = str(entry.get("trl") or "")
        severity = ctx.on_trl("error") if not known or versions.satisfies(trl, known) else "warning"
        yield hit(
            f"{_said(s)}, and {dist} is not installed: {str(entry.get('by') or 'TRL').strip()} "
            f"finds it with importlib.util.find_spec, finds no {dist} distribution, imports the "
            f"repository's {s.kind} and reads its version as 'N/A': `from trl import GRPOTrainer` "
            f"raises InvalidVersion: 'N/A' (TRL {trl}), whether or not use_vllm is on",
            fix=_fix(s),
            severity=severity,
            package=dist,
            path=s.path,
            entry=s.entry.shown,
            manual=_MANUAL,
        )


def installed_twice(name: str, pkg: Any, other: Any) -> tuple[str, str]:
    """PKG013's text and fix, the one both entry points give (``check`` from the facts,
    ``triage`` for a failure of that package judged against the facts): ``pkg`` the copy Python
    imports (the user site's or a PYTHONPATH entry's), ``other`` the environment's own."""
    if pkg.path_kind == "user site":
        why = "the user site comes before the environment's site-packages on sys.path"
        fix = (
            f"Run with PYTHONNOUSERSITE=1 (or python -s) so that the environment's {name} "
            f"{other.version} is imported, exported in the job script (and passed into a container); "
            f"or remove the user copy: `python -m pip uninstall {name}` run outside any venv with the "
            f"user site on removes the first copy on sys.path, {pkg.path}'s. Where the user copy is "
            f"the release you meant to run (a pip that could not write the environment put it there), "
            f"install {name}=={pkg.version} where the environment's copy is (or into a venv made with "
            f"--system-site-packages, where pip can write) and then remove the user copy."
        )
    else:
        why = "PYTHONPATH entries come before site-packages on sys.path"
        fix = (
            f"Drop {pkg.path} from PYTHONPATH (or the {name} copy in it) so that the environment's "
            f"{name} {other.version} is imported."
        )
    what = (
        f"{name} is installed twice: {name} {pkg.version} in {pkg.path} ({pkg.path_kind}) and {name} "
        f"{other.version} in {other.path} ({other.path_kind}); {why}, so the run imports {pkg.version}, "
        f"not the {other.version} installed in the environment, and every check of the environment "
        f"(and every other package's requirement of {name}) meets the copy it was not set up with"
    )
    return what, fix


@rule("PKG013")
def package_installed_twice(ctx: Context) -> Iterator[Hit]:
    """A distribution of the stack installed in two ``sys.path`` entries at two versions, the
    copy Python imports (the first) being the user site's or a PYTHONPATH entry's: the run imports
    the copy the environment was not set up with (facts: ``Package.other_copies``). triage says
    the same finding, in the same words, for a failure of that package (triage/roots.py)."""
    for name, pkg in sorted(ctx.facts.packages.items()):
        other = pkg.shadowed()
        if other is None:
            continue  # installed once, the environment's own copy first, or the copies agree
        what, fix = installed_twice(name, pkg, other)
        yield hit(
            what,
            fix=fix,
            package=name,
            imported=pkg.version,
            imported_from=pkg.path,
            imported_kind=pkg.path_kind,
            other=other.version,
            other_path=other.path,
        )
