"""A repository's README install steps: the ``pip install`` commands of its fenced shell blocks,
and a library built from a checkout (``git clone URL`` … ``git checkout REF`` … ``pip install
-e .`` in that folder) read as ``NAME @ git+URL@REF``. The hook reads them as a fallback only
(``read_stack``): for packages no declaration file names, as WncFht/RLCR installs TRL from a
commit its README names while its environment.yml leaves TRL out."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from envdoctor.facts.declared.dockerfile import _SPLIT, _WITH_VALUE, _install_args
from envdoctor.facts.declared.interface import Declaration, Found, requirement, spend, text_of
from envdoctor.facts.interface import normalize_name

PATTERNS = ("README.md", "README*.md", "readme.md", "Readme.md")
MAX_BYTES = 512 * 1024
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
#: options whose value is the next word (includes are not followed: a README's relative path
#: is often run from another folder, ``cd trl && pip install -r requirements.txt``)
_TAKES_VALUE = _WITH_VALUE | {"-r", "--requirement", "-c", "--constraint"}
_PROMPT = re.compile(r"^\s*(?:\$|>|#)\s+(?=\S)")  # "$ pip install …" as a reader types it


@dataclass
class _Clone:
    url: str  # git+https://host/owner/repo(.git)
    folder: str  # the folder it was cloned into
    ref: str = ""
    inside: bool = False


def shell_blocks(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, command) of the fenced code blocks' lines, prompts removed and
    continuation lines joined."""
    out: list[tuple[int, str]] = []
    fenced = False
    start = 0
    parts: list[str] = []
    for number, raw in enumerate(lines, 1):
        if _FENCE.match(raw):
            fenced, parts = not fenced, []
            continue
        if not fenced:
            continue
        line = _PROMPT.sub("", raw, count=1) if not parts else raw
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        text = " ".join(p.strip() for p in parts).strip()
        parts = []
        if text:
            out.append((start, text))
    return out


def read(path: Path, shown: str) -> Found:
    found = Found(files=[shown])
    clone: _Clone | None = None
    for number, command in shell_blocks(text_of(path, shown, MAX_BYTES).splitlines()):
        for part in _SPLIT.split(command):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            if not words:
                continue
            spend(shown, len(words))
            clone = _follow(words, clone)
            args = _install_args(words)
            if args is not None:
                found.declarations += _installed(args, clone, shown, number)
    return found


def _follow(words: list[str], clone: _Clone | None) -> _Clone | None:
    """The checkout the commands stand in after ``words`` (``git clone``, ``cd``, ``git
    checkout``)."""
    if words[:2] == ["git", "clone"]:
        rest = [w for w in words[2:] if not w.startswith("-")]
        if rest and "://" in rest[0]:
            url = rest[0] if rest[0].startswith("git+") else f"git+{rest[0]}"
            folder = rest[1] if len(rest) > 1 else rest[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
            return _Clone(url=url, folder=folder.rstrip("/"))
        return clone
    if clone is None:
        return None
    if words[0] == "cd" and len(words) > 1:
        clone.inside = Path(words[1].rstrip("/")).name == Path(clone.folder).name
    elif words[:2] in (["git", "checkout"], ["git", "switch"]) or words[:3] == ["git", "reset", "--hard"]:
        refs = [w for w in words[2:] if not w.startswith("-")]
        if refs and clone.inside:
            clone.ref = refs[0]
    return clone


def _installed(args: list[str], clone: _Clone | None, shown: str, line: int) -> list[Declaration]:
    """What one ``pip install``'s words declare: requirements, and ``.`` / ``-e .`` inside a
    checkout as that repository at its reference (includes and other local folders: not read)."""
    out: list[Declaration] = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word in ("-e", "--editable"):
            continue  # the folder follows as its own word
        if word.startswith("-"):
            skip = word.split("=", 1)[0] in _TAKES_VALUE and "=" not in word
            continue
        here = word.split("[", 1)[0]
        folder = here.rstrip("/").removeprefix("./")
        mine = clone is not None and (clone.inside and folder in (".", "") or folder == clone.folder)
        if mine and clone is not None:
            name = normalize_name(clone.url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
            extras = tuple(sorted(x.strip() for x in word.partition("[")[2].rstrip("]").split(",") if x))
            url = f"{clone.url}@{clone.ref}" if clone.ref else clone.url
            out.append(Declaration(name, "", shown, line, extras=extras, url=url, ref=clone.ref))
            continue
        if "$" in word or here.startswith(("/", "../", "./", "~")):
            continue
        decl = requirement(word, shown, line)
        if decl is not None:
            out.append(decl)
    return out
