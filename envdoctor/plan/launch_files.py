"""The files a launch line names (``accelerate launch --config_file X``, the script's ``--config
X.yaml`` and ``--deepspeed X.json``), found where the run would find them.

A file the user names on envdoctor's own command line (``--config``, ``--accelerate-config``) is
input: not there, it is an input error (exit 2). A file a launch line names is the run's: the line
is often written for another folder than the one envdoctor runs in (a README's line run from the
repository's parent, a line that names a TRL checkout's ``examples/accelerate_configs/…``). Such
a file is looked for, in this order, where the line names it (after its own ``cd DIR &&``), from
the repository's root, from the repository's parent folder when the path starts with the
repository's folder name (or with another folder, the rest being a file of the repository: one
not here, or one whose rest is two folders deep or more),
and, for an accelerate config, among the configs TRL and open-r1 ship
(rules/knowledge/trl_accelerate_configs.yaml ``files``: its content is used only when the path
ends with one of those files, and the report says so). A file still not found is not read: the
report says what was not judged (LAY019), and the check goes on with what the launch's flags say.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from envdoctor.plan.cd import literal_path

#: folders climbed from the working folder to find the repository's root (its ``.git``)
MAX_CLIMB = 40

#: what each kind of file sets that is not judged when it is not read
NOT_JUDGED = {
    "accelerate config": (
        "its process count, distributed type (DeepSpeed ZeRO, FSDP) and mixed precision are not "
        "judged: the layout and the memory plan take only what the launch line's flags say"
    ),
    "GRPO config": (
        "its keys are not judged: only the launch line's flags and the script's code are read as the "
        "run's config"
    ),
    "DeepSpeed config": "its ZeRO stage, optimizer and precision are not judged",
}


@dataclass(frozen=True)
class LaunchFile:
    """A file a launch line names that is not where the line names it from the folder envdoctor
    runs in: ``read`` the path read instead (None: not found), ``how`` where that is (or, for a
    config envdoctor knows, which), ``known`` the name of the known config whose content was
    used."""

    what: str  # "accelerate config", "GRPO config", "DeepSpeed config"
    option: str  # how the line names it: "--config_file", "--config", "--deepspeed"
    written: str  # the path as the line names it (after its ``cd``)
    read: str | None = None
    how: str = ""
    known: str | None = None
    #: not read and certain to be missing where the run starts (``missing_in_repository``): the
    #: repository's files of the same name, if any (None: not certain)
    missing: tuple[str, ...] | None = None

    @property
    def not_judged(self) -> str:
        return NOT_JUDGED.get(self.what, "what it sets is not judged")


def repository_root(start: str | os.PathLike[str] = ".") -> Path:
    """The repository the working folder is in: the nearest folder up that holds ``.git``, else
    the working folder itself."""
    here = Path(os.path.abspath(start))
    for folder in (here, *list(here.parents)[:MAX_CLIMB]):
        if (folder / ".git").exists():
            return folder
    return here


def _shown(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("../../") else rel


def locate(written: str) -> tuple[str | None, str]:
    """(the path to read, where it was found) for a file a launch line names: ``written`` itself
    when it is there ("" for how); else from the repository's root, its parent folder, or the
    repository's root without the path's first folder; (None, "") when none holds it."""
    if os.path.lexists(written):
        return written, ""
    if not literal_path(written):
        return None, ""
    root = repository_root()
    parts = PurePosixPath(written.replace(os.sep, "/")).parts
    if not parts or ".." in parts:
        return None, ""
    cwd = Path.cwd()
    tries: list[tuple[Path, str]] = []
    if root != cwd:
        tries.append((root.joinpath(*parts), f"from the repository's root ({_shown(root)})"))
    if len(parts) > 1:
        if parts[0] == root.name:
            tries.append(
                (root.parent.joinpath(*parts), f"from the repository's parent folder ({_shown(root.parent)})")
            )
        elif len(parts) > 2 or not ((cwd / parts[0]).is_dir() or (root / parts[0]).is_dir()):
            # a folder here of that name that lacks the file (made by other lines, a partial
            # copy) does not stop it where the rest names a file two folders deep or more
            tries.append(
                (
                    root.joinpath(*parts[1:]),
                    f"the line names it from the repository's parent folder, with the "
                    f"repository's folder named {parts[0]}",
                )
            )
    for path, how in tries:
        if path.is_file():
            return _shown(path), how
    return None, ""


def known_accelerate_config(written: str, kb: Any = None) -> tuple[str, dict[str, Any], str] | None:
    """(the known file's name, its content, where it comes from) when ``written`` ends with an
    accelerate config TRL or open-r1 ships (``files`` of trl_accelerate_configs.yaml), else None."""
    if kb is None:
        from envdoctor.knowledge import knowledge

        kb = knowledge()
    table = kb.trl_accelerate_configs
    files = table.get("files") or {}
    configs = table.get("configs") or {}
    parts = PurePosixPath(written.replace(os.sep, "/")).parts
    for name, entry in files.items():
        tail = PurePosixPath(name).parts
        if not isinstance(entry, dict) or len(parts) < len(tail) or parts[-len(tail) :] != tail:
            continue
        config = configs.get(entry.get("config"))
        if isinstance(config, dict):
            return name, dict(config), str(entry.get("source") or name)
    return None


#: how far ``missing_in_repository`` looks for a file of the same name
_MISSING_FILES, _MISSING_DEPTH = 20, 6
_SKIP = frozenset({"node_modules", "site-packages", "dist-packages", "build", "dist", "__pycache__", "venv"})


def missing_in_repository(written: str, elsewhere: str = "") -> tuple[str, ...] | None:
    """For a file a launch line names that ``locate`` found nowhere: the repository's files of the
    same name (``()`` for none) where it is certain to be missing when the run starts: a relative
    literal path (no variable, ``~``, ``..``), no file of the repository ends with it (a line
    written for one of its sub-folders would find one), and ``elsewhere`` (the run's other
    lines) does not name it (a file an earlier step writes); None where that is not certain."""
    parts = PurePosixPath(written).parts
    if (
        not literal_path(written)
        or written.startswith("~")
        or not parts
        or ".." in parts
        or written in elsewhere
    ):
        return None
    from envdoctor.plan.repo_walk import walk

    root = repository_root()
    found = walk(
        root,
        [parts[-1]],
        max_files=_MISSING_FILES,
        max_depth=_MISSING_DEPTH,
        skip_dirs=_SKIP,
        skip_hidden_dirs=True,
    )
    if len(found) >= _MISSING_FILES:
        return None  # more than it looked at: not certain
    if any(p.parts[-len(parts) :] == parts for p in found):
        return None  # the line runs from a folder that holds it
    return tuple(_shown(p) for p in found)


def script_here(script: str | None, module: str | None) -> bool:
    """Whether the training script a launch line runs is in this repository (``locate``; a ``-m``
    module as ``pkg/mod.py``, also under ``src/``): a line whose script is not here runs in another
    checkout (a framework's examples), whose files this repository need not hold."""
    if script:
        return literal_path(script) and locate(script)[0] is not None
    if module and module.replace(".", "").replace("_", "").isalnum():
        path = module.replace(".", "/") + ".py"
        return any(locate(p)[0] is not None for p in (path, f"src/{path}"))
    return False
