"""Which package of the stack defines a function a message names, from the frame index.

A call that does not fit its callee's signature (``f() got an unexpected keyword argument 'k'``)
raises in the *caller's* frame: Python never enters the callee, so the traceback's innermost frame
is the code that called and the callee is known only by the name the message prints. The frame
index (rules/knowledge/frames/, every function of the stack's packages by qualified name, release
by release) says whose function that name is. Read only for such a failure; a package's file is
loaded once (``frame_index``'s cache).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envdoctor.knowledge.frame_index import frame_index, packages

#: names too common to place by themselves (every package has them): only ``Class.name`` places
_COMMON = frozenset(
    {"__init__", "__call__", "forward", "generate", "step", "run", "main", "train", "update", "load", "save"}
)
#: indexes read for a frame of their own package only, never to find a name's owner among all the
#: packages: the two largest (transformers, vLLM: 380 KB each, a fifth of a second to load), whose
#: functions the symbol histories name (rules/knowledge/symbols/); a traceback with a frame in one
#: of them still asks it first (``owner``'s ``first``)
FRAMES_ONLY = frozenset({"transformers", "vllm"})
_NAME = re.compile(r"^[A-Za-z_]\w{0,100}(?:\.[A-Za-z_]\w{0,100}){0,4}$")


def _parts(func: str) -> list[str] | None:
    """The qualified name's parts to match, or None when they cannot place a function."""
    if not _NAME.match(func):
        return None
    parts = func.split(".")
    if len(parts) == 1 and (parts[0] in _COMMON or len(parts[0]) < 8 and "_" not in parts[0]):
        return None
    return parts


def modules(package: str, func: str) -> list[str]:
    """The files of ``package`` (paths inside it) that define ``func`` at some release indexed
    (``FrameIndex.defines``); [] when none, or when the name cannot place a function."""
    index = frame_index(package) if _parts(func) else None
    return index.defines(func) if index is not None else []


def owner(func: str, first: Iterable[str | None] = ()) -> tuple[str, list[str]] | None:
    """The one package whose index defines ``func`` and its files, ``first``'s packages tried
    first (the traceback's own); None when no package does, or more than one does."""
    if _parts(func) is None:
        return None
    everyone = [p for p in packages() if p not in FRAMES_ONLY]
    order = list(dict.fromkeys([p for p in first if p in packages()] + everyone))
    hits = [(p, found) for p in order if (found := modules(p, func))]
    return hits[0] if len(hits) == 1 else None
