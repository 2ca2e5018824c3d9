"""Where a literal ``cd`` goes: one reading for the launch parser (``cd scripts && accelerate
launch --config_file ../c.yaml``, plan/launch) and the walk over a repository's launch scripts
(plan/repo_paths)."""

from __future__ import annotations

import os
import re

#: a word whose value is not known before the shell runs it: a variable, a command substitution,
#: a glob, ``~``, a template (``<repo_dir>``, ``{{dir}}``), a ``%`` expansion
DYNAMIC = re.compile(r"[$`*?\[{}<>~%]")


def literal_path(word: str) -> bool:
    """Whether a written path is one envdoctor can follow: relative, no variable, glob, template
    or backslash."""
    return bool(word) and not DYNAMIC.search(word) and not word.startswith("/") and "\\" not in word


def cd_target(folder: str | None, target: str | None) -> str | None:
    """The folder ``cd TARGET`` goes to from ``folder`` (relative to where the commands started,
    ``""`` for there): ``TARGET`` joined on and normalised (``""`` back at the start, ``../x``
    above it); None where it cannot be followed: the folder is already not known, no target, an
    option or ``-``, an absolute path, or a word with a variable, a glob, ``~`` or a template."""
    if folder is None or target is None or target.startswith("-") or not literal_path(target):
        return None
    joined = os.path.normpath(os.path.join(folder or ".", target)).replace(os.sep, "/")
    return "" if joined == "." else joined
