"""The training stack a repository declares, read from its files (never executed).

One reader module per format (``interface.py`` states the contract); ``READERS`` is the only
wiring. ``discover`` finds the files at a repository's root, ``read_stack`` reads them.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import re
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from envdoctor.facts.declared.interface import Declaration, Found, budget

#: format → reader module (each has PATTERNS and read(path, shown)); imported on first use, so
#: the rules (checks/declared.py imports ``ranges`` and ``resolve``) do not load the readers
READERS = {
    "uv.lock": "uvlock",
    "pylock.toml": "pylock",
    "poetry.lock": "poetrylock",
    "pyproject.toml": "pyproject",
    "requirements": "requirements",
    "conda": "conda",
    "dockerfile": "dockerfile",
    "setup.py": "setuppy",
    "setup.cfg": "setupcfg",
    "install script": "shell",
}
#: the bounded walk for requirement files below the root (``src/requirements.txt``)
WALK_DEPTH = 3
WALK_DIRS = 400
WALK_FILES = 16
_NOT_WALKED = {
    "node_modules",
    "site-packages",
    "dist-packages",
    "build",
    "dist",
    "__pycache__",
    "venv",
    "env",
    "wandb",  # W&B runs' records of the environment they ran in (pip freeze), not declarations
}
#: a folder holding one of these is a project of its own (a vendored library): not the stack's
PROJECT_FILES = ("setup.py", "pyproject.toml", "setup.cfg")

__all__ = [
    "PROJECT_FILES",
    "project_of",
    "readmes",
    "run_scripts",
    "READERS",
    "Declaration",
    "Found",
    "discover",
    "is_declaration",
    "read_stack",
    "reader_for",
]


@lru_cache(maxsize=1)
def _modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"{__name__}.{m}") for m in READERS.values())


def _reader(path: str) -> ModuleType | None:
    p = Path(path)
    tail = f"{p.parent.name}/{p.name}"
    for reader in _modules():
        if any(fnmatch.fnmatch(tail if "/" in pat else p.name, pat) for pat in reader.PATTERNS):
            return reader
    return None


def reader_for(path: str) -> ModuleType:
    """The reader of a file (``requirements`` for anything unrecognised: ``-r`` style)."""
    return _reader(path) or importlib.import_module(f"{__name__}.requirements")


def is_declaration(path: str) -> bool:
    """Whether a file is one the readers know (``requirements-gpu.txt``, ``uv.lock``…)."""
    return _reader(path) is not None


def discover(root: Path) -> list[Path]:
    """The declaration files at ``root`` (and ``requirements/``), in a stable order, then the
    requirement files of the folders below (a bounded walk: ``src/requirements.txt``), leaving
    out folders that are projects of their own (a vendored library's pins are not the stack)."""
    found: list[Path] = []
    for reader in _modules():
        for pattern in reader.PATTERNS:
            for path in sorted(root.glob(pattern)):
                if path.is_file() and path not in found:
                    found.append(path)
    found += [p for p in walk_requirements(root) if p not in found]
    kept = [p for p in found if not OTHER_STAGE.match(p.name)]
    return kept if kept else found


#: a requirements file named for a stage other than training (``requirements_eval.txt``,
#: ``requirements-inference.txt``): the environment of that stage, not the training run's (the
#: WeiKangda/MMR-GRPO repository pins torch 2.5.1 in requirements_train.txt and torch 2.7.1 with
#: vLLM 0.10 in requirements_eval.txt; merged, they read as one stack no pip can install). Left out
#: of the stack when another declaration file is there.
OTHER_STAGE = re.compile(
    r"^requirements[-_.]?(?:eval|evals|evaluation|bench|benchmark|inference|infer|serve|serving|"
    r"docs?|lint)(?:[-_.][\w.-]*)?\.(?:txt|in)$",
    re.IGNORECASE,
)


def walk_requirements(root: Path) -> list[Path]:
    """``requirements*.txt`` in the folders below ``root``, breadth first, bounded (``WALK_*``)."""
    from envdoctor.facts.declared import requirements

    out: list[Path] = []
    queue = [(root, 0)]
    seen = 0
    while queue and seen < WALK_DIRS and len(out) < WALK_FILES:
        folder, depth = queue.pop(0)
        seen += 1
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        if folder != root:
            names = {e.name for e in entries}
            if any(p in names for p in PROJECT_FILES):
                continue  # a project of its own
            for e in entries:
                if (
                    e.is_file()
                    and not e.is_symlink()
                    and any(fnmatch.fnmatch(e.name, pat) for pat in requirements.PATTERNS if "/" not in pat)
                ):
                    out.append(e)
        if depth < WALK_DEPTH:
            queue += [
                (e, depth + 1)
                for e in entries
                if e.is_dir()
                and not e.is_symlink()
                and not e.name.startswith(".")
                and e.name not in _NOT_WALKED
                and not (folder == root and e.name == "requirements")  # read at the root already
            ]
    return out[:WALK_FILES]


def read_stack(paths: list[Path], root: Path, fallback: list[Path] | None = None) -> Found:
    """Every declaration of these files; includes reached from one file are not read again as
    files of their own. ``setup.py`` is read as a syntax tree, never run. The repository's own
    package (TRL's repository is TRL) is declared at its own version. ``fallback`` (the root's
    READMEs): their install steps declare only the packages no file declares, the first step
    of each."""
    from envdoctor.redact import clean  # notes show file text: secrets masked, controls escaped

    stack = Found()
    with budget():  # caps on the files, bytes and requirements of all the files together
        for path in paths:
            away = links_out(path, root)
            if away:
                stack.notes.append(f"{away} (give its target to --requirements to have it read)")
                continue
            shown = _shown(path, root)
            if shown in stack.files:
                continue  # already read as an include
            one = reader_for(str(path)).read(path, shown)
            project = project_of(path, root)
            one.projects.update({f: project for f in one.files if f not in one.projects})
            stack.add(one)
        from envdoctor.facts.declared.itself import own_package

        stack.add(own_package(root))
        for path in fallback or []:
            away = links_out(path, root)
            if away:
                stack.notes.append(f"{away} (give its target to --requirements to have it read)")
                continue
            stack.add(_steps(path, _shown(path, root), {d.name for d in stack.declarations}))
    stack.declarations = list(dict.fromkeys(stack.declarations))  # a file read twice counts once
    stack.local_pins = [d for d in dict.fromkeys(stack.local_pins) if d.file not in stack.indexed]
    if stack.local_pins:  # a README, a script or a Dockerfile may give pip the index (DCL008)
        from envdoctor.facts.declared.index_hint import index_mentioned

        files, names = {d.file for d in stack.local_pins}, {d.name for d in stack.local_pins}
        stack.index_elsewhere = index_mentioned(root, files, names)
    stack.notes = [clean(n, limit=300) for n in stack.notes]
    return stack


def links_out(path: Path, root: Path) -> str | None:
    """Why a file of the repository is not read, or None: it lies in ``root`` as named, but its
    real path leaves it (a committed ``requirements.txt -> ~/.netrc``: its lines would be
    quoted in the report as an ``-r`` outside the repository never is). A file named outside
    the repository (``--requirements /opt/env/req.txt``) is the user's own and is read."""
    try:
        named = Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return None
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return f"{named}: a link to a file outside the repository; not read"
    return None


def _readme_reader() -> ModuleType:
    """The README reader, loaded by name as the file readers are (it uses their parts)."""
    return importlib.import_module(f"{__name__}.readme")


#: READMEs of the folders one below the root read after the root's (an examples/ folder's install
#: step); a folder that is a project of its own (a vendored library) is not the repository's docs
SUB_READMES = 8


def readmes(root: Path) -> list[Path]:
    """The README files at ``root`` whose install steps are read as a fallback, then those of
    its folders one level down that hold no project file (``examples/README.md``)."""
    readme = _readme_reader()
    found: list[Path] = []
    for pattern in readme.PATTERNS:
        found += [p for p in sorted(root.glob(pattern)) if p.is_file() and p not in found]
    subs: list[Path] = []
    for p in sorted(root.glob("*/README.md")):
        folder = p.parent
        if folder.name.startswith(".") or any((folder / f).exists() for f in PROJECT_FILES):
            continue
        if p.is_file() and not p.is_symlink():
            subs.append(p)
        if len(subs) >= SUB_READMES:
            break
    return found + subs


#: the repository's own run scripts at its root whose install steps are read as a fallback too
RUN_SCRIPTS = 8


def run_scripts(root: Path) -> list[Path]:
    """Shell scripts at ``root`` that are no install script (those are declaration files): their
    ``pip install`` lines are read as a fallback, as a README's (``uv pip install vllm trl`` at
    the top of ``run_grpo.sh``)."""
    shell = importlib.import_module(f"{__name__}.shell")
    out: list[Path] = []
    for p in sorted(root.glob("*.sh")):
        if any(p.match(pattern) for pattern in shell.PATTERNS) or not p.is_file() or p.is_symlink():
            continue
        out.append(p)
        if len(out) >= RUN_SCRIPTS:
            break
    return out


def _steps(path: Path, shown: str, declared: set[str]) -> Found:
    """A README's install steps for the packages not in ``declared`` (the first of each); a
    README that cannot be read is a note, never a stop: it is prose, not a declaration."""
    from envdoctor.errors import InputError

    reader = importlib.import_module(f"{__name__}.shell") if path.suffix == ".sh" else _readme_reader()
    try:
        steps = reader.read(path, shown)
    except InputError as exc:
        return Found(notes=[f"{shown}: install steps not read: {exc}"])
    # a run script's or a sub-folder README's step (not the root README's) declares only what it
    # leaves open: an exact version there may be a one-off change of an environment the
    # repository's files declare otherwise (launch.sh upgrading vLLM in place), not its install
    secondary = shown.endswith(".sh") or "/" in shown
    kept: dict[str, Declaration] = {}
    for d in steps.declarations:
        if d.name not in declared and not (secondary and (d.pinned or d.url)):
            kept.setdefault(d.name, d)
    if not kept:
        return Found()
    return Found(declarations=list(kept.values()), files=[shown], projects={shown: ""})


def project_of(path: Path, root: Path) -> str:
    """The project a declaration file belongs to: the nearest folder from its own up to
    ``root`` that holds a project file (``PROJECT_FILES``), else its own folder (its parent for a
    ``requirements/`` folder), relative to ``root`` ("" for the root itself, or for a file
    outside it). Two projects of one repository (``trl/`` and
    ``verl-empo/``, each with its own pins) are two environments, not one."""
    try:
        base = root.resolve()
        folder = path.parent.resolve()
        rel = folder.relative_to(base)
    except (ValueError, RuntimeError, OSError):
        return ""
    parts = rel.parts
    for n in range(len(parts), 0, -1):
        here = base.joinpath(*parts[:n])
        if any((here / name).is_file() for name in PROJECT_FILES):
            return "/".join(parts[:n])
    # no project file between it and the root: a folder of its own with its own pins is its own
    # environment (lara/requirements_cluster.txt beside expert_guy/…/requirements.txt), except a
    # folder that only holds the pins of its parent (requirements/base.txt, requirements/gpu.txt)
    while parts and parts[-1].lower().startswith(("requirement", "reqs", "deps")):
        parts = parts[:-1]
    return "/".join(parts)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, RuntimeError, OSError):  # outside the root, a symlink loop
        return str(path)
