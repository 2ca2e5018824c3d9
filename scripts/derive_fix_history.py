#!/usr/bin/env python3
"""Derive the fix history of the stack's functions from their git histories (maintainer command).

For a package's repository (a git directory: a bare mirror or a checkout's ``.git``) it walks the
default branch's first-parent history (``git log --first-parent -p -U0``, the ``.py`` files under the
package's folders) and keeps every commit that is a fix: its subject (or a merge's PR title) says
fix / bug / crash / error / regression / broken / wrong / incorrect, or its message closes an issue
(``Fixes #123``). For each it records the Python functions the change touched: each hunk's lines are
mapped to the innermost ``def`` (and the class around it) that holds them, on the side they are on
(``ast`` of the file after the commit for added lines, before it for removed ones). The hashes of
the removed lines are kept too (BLAKE2s, 3 bytes, of the text without whitespace and with one kind
of quote; lines of 16 characters or more that the file after the fix does not hold, rewrapped or
not, or holds indented deeper: moved under a new ``if`` / ``try``): a traceback that shows one of
them ran the code the fix replaced. So are the hashes of the lines it added (at most ``MAX_ADDED``
per function, 16 characters or more, no comment or docstring: no traceback prints one) that the
file before it did not hold, rewrapped or not, kept with a ``+`` before them: a traceback that
shows one of them ran code with the fix, so no fix of its release or before is that run's fix. A
subject about linting, formatting, style or typos is no fix unless it also says bug / crash /
regression or names an exception (``AttributeError``); ``format`` is a formatter's pass only as
the subject's verb ("Format the tests"), not as a noun ("Fix: handle key format mismatch",
unslothai/unsloth-zoo#773).

The release that first ships a fix:

* ``--tags REGEX`` (one group: the version): the smallest release tag whose history holds the commit,
  or a commit on a release branch with the same PR number ``(#N)`` in its subject (a fix
  cherry-picked into a patch release: TRL 0.19.1);
* else the package's own version line (``__version__ = "2025.4.3"`` in a ``.py`` file, ``version =
  "…"`` in ``pyproject.toml``): the version of the first bump at or after the commit (date-versioned
  packages whose repositories have no tags per release: unsloth, unsloth_zoo). A bump made before a
  release's last commits maps those commits to the next version: a later release than the true one,
  never an earlier one. A bump below one made before it is no release: a vendored copy's own
  ``__init__.py`` (unsloth_zoo's flash-linear-attention ``0.5.1``) or a bump undone at once.

Commits after the newest release are kept with release ``""`` (fixed on the branch, not released):
triage names them as "not in a release yet" with an install from the repository at the commit.

The failure a fix's message quotes is kept with it: the exception lines (``Type: message``), the
frames of the package in a pasted traceback (module path inside the package, function; the
innermost ones) and messages its prose quotes without an exception's name (``a false '# of LoRAs does
not match # of saved modules' error``: five words or more), so that triage can tell a log that fails
the very way the fix describes.

It writes ``rules/knowledge/fixes/DIST.json.gz`` (schema ``envdoctor.fixes/1``)::

    {"schema": …, "package": "trl", "source": "huggingface/trl", "head": "<sha>",
     "subdir": "", "head_date": "2026-01-29", "releases": ["0.14.0", …],
     "fixes": [[sha10, date, release, subject, number], …,
               [sha10, date, "", subject, number, {"e": ["RuntimeError: Expected all …"],
                                                   "f": [["trainer/ppo/core_algos.py", "f"]],
                                                   "m": ["# of LoRAs does not match # of …"]}]],
     "functions": {"trainer/grpo_trainer.py": {"GRPOTrainer._generate": [[fix, "a1b2c3", …], …]}}}

``functions`` maps a module path (inside the package, as triage's frames name it) and a function's
qualified name to the fixes that changed it (an index into ``fixes``, then the removed lines'
hashes and the added lines' hashes, those with a ``+`` before them). Budget: 3 MB for all files
together (``--budget``; the command fails above it). Triage reads a package's file only for a
traceback whose frames are in that package, or for a failure shown without frames that the
raise-site index places there or that names an attribute an object lacks
(envdoctor/triage/fixhist.py); the static check never does.

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool):

    python scripts/derive_fix_history.py --all --mirrors /work/.mirror     # every package of PACKAGES
    # 2026-11-29 (issue #36: "format" as a noun, a vendored version line, quoted messages): trl,
    # unsloth and unsloth-zoo derived again from mirrors of the same heads (2026-07-24, 2026-08-22,
    # 2026-08-20), no --exclude (the seventh held-out set is development data now):
    python scripts/derive_fix_history.py --all --mirrors /work/.mirror --only trl --only unsloth \
        --only unsloth-zoo
    # 2026-11-29 (issue #36: the libraries under the RL stacks): deepspeed, liger-kernel, accelerate
    # and peft added from mirrors of 2026-08-22, 2026-08-21, 2026-07-24 and 2026-08-21:
    python scripts/derive_fix_history.py --all --mirrors /work/.mirror --only deepspeed \
        --only liger-kernel --only accelerate --only peft
    # 2026-11-29 (issue #36: which of several fixes of a function is a run's; the lines each fix
    # added): every package derived again from mirrors of the same heads as their files before
    # (verl, ms-swift, slime, axolotl, … had been derived before the "format as a noun" change:
    # a few more fixes each):
    python scripts/derive_fix_history.py --all --mirrors /work/.mirror
    # 2026-11-29 (review rv15b): the same heads again, no added comment or docstring line kept
    # (``unprinted``: no traceback prints one):
    python scripts/derive_fix_history.py --all --mirrors /work/.mirror
    # 2026-11-30 (issue #36, version bugs of the development logs): trl from 2023-01-01
    # (``SINCE_OF``), the same head (2026-07-24): 386 -> 449 fixes, the 2024 and later ones
    # unchanged (TRL 0.4 - 0.7's PPO / DPO / SFT fixes: #687, #730, #825, ...):
    python scripts/derive_fix_history.py --all --mirrors /work/.mirror --only trl
    python scripts/derive_fix_history.py --git-dir DIR --package trl --root trl --tags '^v(\\d[\\w.]*)$'

Offline: it reads the git directory only (``git`` on the path).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/gitread.py
from gitread import git  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "fixes"
SCHEMA = "envdoctor.fixes/1"
BUDGET = 3_000_000
SINCE = "2024-01-01"  # older fixes ship in releases no GRPO user runs
#: packages whose users still run releases older than SINCE: TRL's PPO / DPO / SFT trainers of
#: 0.4 - 0.7 (2023) are in the development logs' version bugs (huggingface/trl#730's ZeRO-3
#: PPOTrainer, #825's ZeRO-1/2 DPOTrainer): their fixes from this date (``--since`` overrides)
SINCE_OF = {"trl": "2023-01-01"}
MAX_HASHES = 12  # removed lines kept per function and fix
MAX_ADDED = 16  # added lines kept per function and fix (a traceback that shows one ran the fix)
MIN_LINE = 16  # a removed line shorter than this (``return x``, ``pass``) tells no code apart
MAX_SUBJECT = 120

#: distribution -> (mirror folder (owner+name), repository, folders of its import packages in the
#: repository (the module paths are relative to each), release-tag pattern or "" for the version line)
PACKAGES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "trl": ("huggingface+trl", "huggingface/trl", ("trl",), r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"),
    "unsloth": ("unslothai+unsloth", "unslothai/unsloth", ("unsloth",), ""),
    "unsloth-zoo": ("unslothai+unsloth-zoo", "unslothai/unsloth-zoo", ("unsloth_zoo",), ""),
    "verl": ("verl-project+verl", "verl-project/verl", ("verl",), r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"),
    "llamafactory": (
        "hiyouga+LLaMA-Factory",
        "hiyouga/LLaMA-Factory",
        ("src/llamafactory",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "openrlhf": (
        "OpenRLHF+OpenRLHF",
        "OpenRLHF/OpenRLHF",
        ("openrlhf",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "skyrl-train": (
        "NovaSky-AI+SkyRL",
        "NovaSky-AI/SkyRL",
        ("skyrl-train/skyrl_train", "skyrl_train", "skyrl/backends/skyrl_train"),  # 2026: skyrl/backends/
        r"^skyrl_train-v(\d+\.\d+\.\d+)$",
    ),
    "nemo-rl": ("NVIDIA-NeMo+RL", "NVIDIA-NeMo/RL", ("nemo_rl",), r"^v(\d+\.\d+\.\d+)$"),
    "areal": (
        "areal-project+AReaL",  # inclusionAI/AReaL until 2026
        "areal-project/AReaL",
        ("areal", "realhf"),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    # more stacks users run GRPO through (their frames in the development sets' logs: ms-swift's
    # GRPO trainers, prime-rl and slime from checkouts, axolotl; verifiers and open-instruct
    # from their own trainers)
    "ms-swift": ("modelscope+ms-swift", "modelscope/ms-swift", ("swift",), r"^v(\d+\.\d+\.\d+)$"),
    "prime-rl": (
        "PrimeIntellect-ai+prime-rl",
        "PrimeIntellect-ai/prime-rl",
        ("src/prime_rl",),
        r"^v(\d+\.\d+\.\d+)$",
    ),
    "slime": ("THUDM+slime", "THUDM/slime", ("slime",), r"^v(\d+\.\d+\.\d+)$"),
    "axolotl": (
        "axolotl-ai-cloud+axolotl",
        "axolotl-ai-cloud/axolotl",
        ("src/axolotl",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "verifiers": (
        "PrimeIntellect-ai+verifiers",
        "PrimeIntellect-ai/verifiers",
        ("verifiers",),
        r"^v(\d+\.\d+\.\d+)$",
    ),
    "open-instruct": (
        "allenai+open-instruct",
        "allenai/open-instruct",
        ("open_instruct",),
        r"^v(\d+\.\d+\.\d+)$",
    ),  # the libraries under them where GRPO users meet release bugs behind generic messages (ZeRO's
    # partitioning and checkpoint code, Liger's fused GRPO loss, accelerate's wrapping and
    # gathering, peft's adapters): their frames or raise sites are under every TRL trainer
    "deepspeed": (
        "deepspeedai+DeepSpeed",
        "deepspeedai/DeepSpeed",
        ("deepspeed",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "liger-kernel": (
        "linkedin+Liger-Kernel",
        "linkedin/Liger-Kernel",
        ("src/liger_kernel",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "accelerate": (
        "huggingface+accelerate",
        "huggingface/accelerate",
        ("src/accelerate",),
        r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$",
    ),
    "peft": ("huggingface+peft", "huggingface/peft", ("src/peft",), r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"),
}

_FIX_WORDS = re.compile(
    r"\b(?:fix(?:es|ed|ing)?|bug(?:s|fix)?|hotfix|crash(?:es|ing)?|errors?|regression|broken|wrong|"
    r"incorrect|exception|fails?|failing|failure)\b",
    re.IGNORECASE,
)
#: a formatter's or linter's pass, a typo; ``format`` only as the subject's verb ("Format the
#: tests"): the noun is a data layout a fix may be about ("key format mismatch", "chat format")
_STYLE = re.compile(
    r"\b(?:lint(?:ing|er|s)?|format(?:ting|ter)|style|typos?|ruff|pre-commit|isort|yapf|black|"
    r"docstrings?|comments?|spelling)\b|^\W*(?:[\w-]+(?:\([\w-]+\))?:\s*)?format\b",
    re.IGNORECASE,
)
#: what a style word does not outweigh: a bug, a crash, a regression, an exception named
_BUG = re.compile(r"\b(?:bugs?|crash(?:es)?|regression|(?-i:[A-Z]\w{0,40}Error))\b", re.IGNORECASE)
_CLOSES = re.compile(
    r"\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s*(?:[\w.-]+/[\w.-]+)?#(\d{1,7})", re.I
)
_NUMBER = re.compile(r"\(#(\d{1,7})\)|#(\d{1,7})\b")
_MERGE = re.compile(r"^Merge pull request #(\d{1,7}) from ")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BUMP_PY = re.compile(r"""^\+\s*__version__\s*=\s*["']([0-9][\w.+-]*)["']""")
_BUMP_TOML = re.compile(r"""^\+version\s*=\s*["']([0-9][\w.+-]*)["']""")
_SEP = "\x1e\x1fCOMMIT "
#: a frame quoted in a commit message: ``File "…/verl/trainer/ppo/core_algos.py", line 353, in f``
_QUOTED_FRAME = re.compile(r'File "([^"\n]{1,400}\.py)", line \d{1,7}, in ([\w.<>]{1,120})')
#: an exception line quoted in a commit message (in a pasted traceback or in prose)
_QUOTED_EXC = re.compile(
    r"(?:^|[\s>:`\]])((?:[A-Za-z_]\w{0,60}\.){0,6}(?:[A-Z]\w{0,60}(?:Error|Exception)|StopIteration))"
    r"(?::[ \t]?(.{0,300}))?$"
)
#: a failure's message a fix's prose quotes without its exception's name: ``the check raised a
#: false '# of LoRAs does not match # of saved modules' error``
_QUOTED_MESSAGE = re.compile(r"(?<![\w'\"`])(['\"`])([^'\"`\n]{20,160})\1(?![\w'\"`])")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")
MIN_QUOTED_WORDS = 5  # words of a quoted message: fewer name no failure in particular
MAX_QUOTED_FRAMES = 6  # the innermost frames of the package a message quotes
MAX_QUOTED_EXC = 3
MAX_QUOTED_MESSAGES = 3
MAX_QUOTED_TEXT = 160


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _bare(text: str) -> str:
    """``text`` without whitespace, with one kind of quote and without a formatter's magic trailing
    commas (what a formatter does not change)."""
    bare = "".join(text.split()).replace("'", '"')
    return bare.replace(",)", ")").replace(",]", "]").replace(",}", "}")


def line_hash(line: str) -> str:
    """The hash of a source line as a traceback prints it, without its whitespace and with one kind
    of quote (a change of formatting is no change of the line)."""
    return hashlib.blake2s("".join(line.split()).replace("'", '"').encode(), digest_size=3).hexdigest()


# -- the commits ---------------------------------------------------------------------------------


@dataclass
class FileDiff:
    path: str  # in the repository, after the commit
    old_path: str
    added: list[tuple[int, int]] = field(default_factory=list)  # new-side line ranges (inclusive)
    removed: list[tuple[int, int]] = field(default_factory=list)  # old-side line ranges
    removed_lines: dict[int, str] = field(default_factory=dict)  # old line number -> text
    added_lines: list[str] = field(default_factory=list)
    added_text: dict[int, str] = field(default_factory=dict)  # new line number -> text


@dataclass
class Commit:
    sha: str
    date: str
    subject: str
    body: str
    files: list[FileDiff] = field(default_factory=list)
    bump: str = ""  # the version this commit sets

    @property
    def title(self) -> str:
        """The subject; a merge's PR title (its body's first line) after ``Merge pull request``."""
        if _MERGE.match(self.subject):
            first = next((x.strip() for x in self.body.splitlines() if x.strip()), "")
            return first or self.subject
        return self.subject

    @property
    def number(self) -> str:
        """The PR or issue number the subject or a ``Fixes #N`` names."""
        own = re.findall(r"\(#(\d{1,7})\)", self.subject)  # "after #1271 (#1292)": its own PR is last
        if own and not _MERGE.match(self.subject):
            return str(own[-1])
        m = _MERGE.match(self.subject) or _NUMBER.search(self.subject) or _CLOSES.search(self.body)
        if m is None:
            return ""
        return next(g for g in m.groups() if g)

    def is_fix(self) -> bool:
        if _STYLE.search(self.title) and not _BUG.search(self.title):
            return False  # a formatter's or linter's pass, a typo: lines change, behaviour does not
        return bool(
            _FIX_WORDS.search(self.title) or _FIX_WORDS.search(self.subject) or _CLOSES.search(self.body)
        )


def commits(git_dir: Path, roots: tuple[str, ...], since: str, ref: str = "HEAD") -> Iterator[Commit]:
    """The first-parent commits of ``ref`` since ``since`` that change ``.py`` files under ``roots``
    (and the ``pyproject.toml`` files, for version bumps), oldest first, with their -U0 diffs."""
    specs = [f"{r}/**/*.py" for r in roots] + ["pyproject.toml", "*/pyproject.toml"]
    proc = subprocess.Popen(
        [
            "git",
            f"--git-dir={git_dir}",
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--reverse",
            "-p",
            "-U0",
            "--no-renames",
            "--no-color",
            f"--since={since}",
            "--date=short",
            f"--format={_SEP}%H%x1f%ad%x1f%s%x1f%b%x1f",
            ref,
            "--",
            *[f":(glob){s}" for s in specs],
        ],
        stdout=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    assert proc.stdout is not None
    current: Commit | None = None
    header: list[str] = []
    f: FileDiff | None = None
    old_no = new_no = 0
    in_header = False
    for raw in proc.stdout:
        line = raw.rstrip("\n")
        if line.startswith(_SEP) or in_header:
            if line.startswith(_SEP):
                if current is not None:
                    yield current
                header = [line[len(_SEP) :]]
                current = None
            else:
                header.append(line)
            text = "\n".join(header)
            if text.count("\x1f") >= 4:
                sha, date, subject, body, _ = text.split("\x1f", 4)
                current = Commit(sha, date, subject, body)
                in_header = False
            else:
                in_header = True
            continue
        if current is None:
            continue
        if line.startswith("diff --git "):
            f = None
            continue
        if line.startswith("--- "):
            old = line[4:]
            f = FileDiff("", old[2:] if old.startswith("a/") else "")
            continue
        if line.startswith("+++ ") and f is not None:
            new = line[4:]
            f.path = new[2:] if new.startswith("b/") else ""
            current.files.append(f)
            continue
        m = _HUNK.match(line)
        if m is not None and f is not None:
            a, b, c, d = int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1)
            if b:
                f.removed.append((a, a + b - 1))
            if d:
                f.added.append((c, c + d - 1))
            else:  # a pure removal: the new-side position is between lines c and c+1
                f.added.append((max(c, 1), max(c, 1)))
            old_no, new_no = a, c
            continue
        if f is None:
            continue
        if line.startswith("-"):
            f.removed_lines[old_no] = line[1:]
            old_no += 1
        elif line.startswith("+"):
            f.added_lines.append(line[1:])
            f.added_text[new_no] = line[1:]
            new_no += 1
            bump = _BUMP_PY.match(line) if f.path.endswith(".py") else _BUMP_TOML.match(line)
            if bump is not None and _version(bump[1]) is not None:
                current.bump = bump[1]
    if current is not None:
        yield current
    proc.wait()


# -- the failure a fix's message quotes ------------------------------------------------------------


def _inside(path: str, folders: frozenset[str]) -> str:
    """The module path of ``path`` inside the package (after its last folder named as one of
    ``folders``): ``/x/site-packages/verl/trainer/a.py`` -> ``trainer/a.py``; "" when it is not in it."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in folders:
            return "/".join(parts[i + 1 :])
    return ""


def quoted(body: str, folders: frozenset[str]) -> dict[str, list[object]]:
    """The failure a fix's message quotes: the exception lines (``Type: message``, whitespace
    collapsed, at most ``MAX_QUOTED_EXC``) and the frames of the package in its tracebacks (module
    path inside the package, function; the innermost ``MAX_QUOTED_FRAMES``), or {} for none."""
    frames: list[list[str]] = []
    excs: list[str] = []
    for line in body.splitlines()[:600]:
        m = _QUOTED_FRAME.search(line)
        if m is not None:
            module = _inside(m[1], folders)
            if module and [module, m[2]] not in frames:
                frames.append([module, m[2]])
            continue
        e = _QUOTED_EXC.search(line.strip()[:400])
        if e is not None and (e[2] or frames):  # a bare class name in prose quotes no failure
            text = " ".join(f"{e[1].rsplit('.', 1)[-1]}: {e[2] or ''}".split())[:MAX_QUOTED_TEXT]
            if text not in excs:
                excs.append(text)
    said: list[str] = []
    for m in _QUOTED_MESSAGE.finditer(body[:20000]):
        text = " ".join(m[2].split())
        if (
            len(_PROSE_WORD.findall(text)) >= MIN_QUOTED_WORDS
            and text.count(" ") >= MIN_QUOTED_WORDS - 1  # words, not a dotted name
            and not any(x in text for x in ("://", "/", "(", "=", "{", "<"))  # a path, code, a link
            and text not in said
            and not any(text in e for e in excs)
        ):
            said.append(text[:MAX_QUOTED_TEXT])
    out: dict[str, list[object]] = {}
    if said:
        out["m"] = said[:MAX_QUOTED_MESSAGES]
    if excs:
        out["e"] = list(excs[-MAX_QUOTED_EXC:])
    if frames:
        out["f"] = list(frames[-MAX_QUOTED_FRAMES:])
    return out


# -- functions of a file -------------------------------------------------------------------------


_SPANS: dict[str, list[tuple[int, int, str]]] = {}


def spans_cached(source: str) -> list[tuple[int, int, str]]:
    """``spans`` of a text seen before (a fix's old side is often the previous fix's new side)."""
    key = hashlib.blake2s(source.encode(), digest_size=16).hexdigest()
    found = _SPANS.get(key)
    if found is None:
        if len(_SPANS) > 4096:
            _SPANS.clear()
        found = _SPANS[key] = spans(source)
    return found


def spans(source: str) -> list[tuple[int, int, str]]:
    """The functions of ``source`` as (first line, last line, qualified name), outermost first; a
    function's lines include its decorators. Nested functions are named ``outer.<locals>.inner``
    (as Python's qualified names are)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                last = child.end_lineno or child.lineno
                if isinstance(child, ast.ClassDef):
                    walk(child, name + ".", False)
                else:
                    out.append((first, last, name))
                    walk(child, name + ".<locals>.", True)
            else:
                walk(child, prefix, in_function)

    walk(tree, "", False)
    return out


_UNPRINTED: dict[str, frozenset[int]] = {}


def unprinted(source: str) -> frozenset[int]:
    """The lines of ``source`` that no traceback prints as a frame's line, no instruction starting
    on them: a comment on a line of its own and the lines of a docstring (a module's, a class's, a
    function's). An added line among them tells nothing of the run: it is not kept."""
    key = hashlib.blake2s(source.encode(), digest_size=16).hexdigest()
    found = _UNPRINTED.get(key)
    if found is None:
        if len(_UNPRINTED) > 4096:
            _UNPRINTED.clear()
        out = {n for n, line in enumerate(source.splitlines(), 1) if line.lstrip().startswith("#")}
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body
            ):
                doc = node.body[0]
                if (
                    isinstance(doc, ast.Expr)
                    and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)
                ):
                    out.update(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
        found = _UNPRINTED[key] = frozenset(out)
    return found


def touched(fns: list[tuple[int, int, str]], ranges: list[tuple[int, int]]) -> dict[str, list[int]]:
    """The innermost function holding each line of ``ranges`` -> the lines (module-level lines and
    class bodies outside a method are not a function's)."""
    out: dict[str, list[int]] = {}
    for a, b in ranges:
        for n in range(a, b + 1):
            best = None
            for first, last, name in fns:
                if first <= n <= last and (best is None or first >= best[0]):
                    best = (first, last, name)
            if best is not None:
                out.setdefault(best[2], []).append(n)
    return out


class Blobs:
    """``git cat-file --batch``: file contents at a commit, one process for all of them."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def get(self, rev: str, path: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{rev}:{path}\n".encode())
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().decode().split()
        if len(head) < 3 or head[1] == "missing":
            return ""
        size = int(head[2])
        data = self.proc.stdout.read(size + 1)[:size]
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


# -- releases ------------------------------------------------------------------------------------


def tag_releases(git_dir: Path, pattern: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The releases (sorted), the release that first holds each commit, and each PR number's first
    release (from the subjects of the commits each release adds: cherry-picks on release branches)."""
    rx = re.compile(pattern)
    tags: list[tuple[Version, str, str]] = []
    for tag in git(git_dir, "tag", "--list").split():
        m = rx.match(tag)
        v = _version(m[1]) if m else None
        if m and v is not None and not v.is_prerelease and not v.is_devrelease:
            tags.append((v, m[1], tag))
    tags.sort()
    first: dict[str, str] = {}
    by_number: dict[str, str] = {}
    earlier: list[str] = []
    for _, version, tag in tags:
        out = git(git_dir, "log", "--format=%H%x1f%s", f"{tag}^{{commit}}", "--not", *earlier)
        for row in out.splitlines():
            sha, _, subject = row.partition("\x1f")
            first.setdefault(sha, version)
            for m in _NUMBER.finditer(subject):
                by_number.setdefault(m[1] or m[2], version)
        earlier.append(f"{tag}^{{commit}}")
    return [t[1] for t in tags], first, by_number


# -- the history ---------------------------------------------------------------------------------


#: other names of the repositories (renamed or moved: old links point at either)
ALIASES = {
    "hiyouga/llama-factory": ("hiyouga/llamafactory",),
    "verl-project/verl": ("volcengine/verl",),
    "areal-project/areal": ("inclusionai/areal",),
}
_THREAD = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|commit)/(\w+)")


def exclusions(path: Path, repo: str) -> frozenset[str]:
    """The issue / PR numbers and commit SHAs of ``repo`` that the URLs in ``path`` name (one URL a
    line: a held-out evaluation's threads, whose fixes must not be in the knowledge it judges)."""
    names = {repo.lower(), *ALIASES.get(repo.lower(), ())}
    names |= {new for new, olds in ALIASES.items() if repo.lower() in olds}
    out = set()
    for m in _THREAD.finditer(path.read_text(errors="replace")):
        if m[1].lower() in names:
            out.add(m[2].lower())
    return frozenset(out)


_CANONICAL = {old: new for new, olds in ALIASES.items() for old in olds}
#: a thread named in a commit message: a URL, or ``owner/name#N``
_NAMED = re.compile(
    r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|commit)/(\w+)|\b([\w.-]+/[\w.-]+)#(\d{1,7})\b"
)
_BARE = re.compile(r"(?<![\w/.-])#(\d{1,7})\b")


def _key(repo: str, number: str) -> str:
    name = repo.lower().removesuffix(".git")
    return f"{_CANONICAL.get(name, name)}#{number.lower()}"


def thread_keys(path: Path) -> frozenset[str]:
    """Every thread the URLs in ``path`` name, of any repository, as ``owner/name#N`` (a commit:
    ``owner/name#sha``): a fix whose message quotes one of them is left out too."""
    return frozenset(_key(m[1], m[2]) for m in _THREAD.finditer(path.read_text(errors="replace")))


def excluded(
    c: Commit, exclude: frozenset[str], threads: frozenset[str] = frozenset(), repo: str = ""
) -> bool:
    """The commit is, or fixes, or quotes an excluded issue or PR (its subject's numbers, a merge's
    PR, a ``#N`` of its message; with ``threads``, an excluded thread of any repository that its
    message names by URL or as ``owner/name#N``), or is an excluded commit."""
    numbers = {m[1] or m[2] for m in _NUMBER.finditer(c.subject)}
    numbers |= {m[1] for m in _CLOSES.finditer(c.body)}
    numbers |= {m[1] for m in _BARE.finditer(c.body)}  # "follow-up of #3703": its own repository's
    merge = _MERGE.match(c.subject)
    if merge:
        numbers.add(merge[1])
    if numbers & exclude or any(c.sha.startswith(x) for x in exclude if len(x) >= 7):
        return True
    if threads:
        named = {_key(m[1] or m[3], m[2] or m[4]) for m in _NAMED.finditer(c.body)}
        if repo:
            named |= {_key(repo, n) for n in numbers}
        return bool(named & threads)
    return False


def releases_of(
    git_dir: Path, tags: str, rows: list[Commit]
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The releases (sorted), the release that first holds each commit of ``rows`` and each PR
    number's first release: from the release tags (``tags``), or else from the version line (the
    first bump at or after each commit)."""
    if tags:
        return tag_releases(git_dir, tags)
    releases: list[str] = []
    first: dict[str, str] = {}
    by_number: dict[str, str] = {}
    # the version line: the first bump at or after each commit
    top: Version | None = None
    for c in rows:  # a bump below an earlier one is another package's line: not a release
        v = _version(c.bump) if c.bump else None
        if v is not None and top is not None and v < top:
            c.bump = ""  # a vendored copy (unsloth_zoo/fla: 0.5.1), a bump undone (4.6, 4.5, 4.7)
        elif v is not None:
            top = v
    bumped: list[str] = []
    upcoming = ""
    for c in reversed(rows):
        if c.bump:
            upcoming = c.bump
            bumped.append(c.bump)
        first[c.sha] = upcoming
    seen = {str(v) for v in (_version(b) for b in bumped) if v is not None}
    releases = sorted(seen, key=lambda x: Version(x))
    return releases, first, by_number


def derive(
    git_dir: Path,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = SINCE,
    source: str = "",
    ref: str = "HEAD",
    exclude: frozenset[str] = frozenset(),
    threads: frozenset[str] = frozenset(),
) -> dict[str, object]:
    """The fix history of ``package`` (the module docstring's layout); ``exclude``: the numbers of
    this repository's issues and PRs (and commit SHAs) whose fixes are left out, ``threads``: the
    threads of any repository (``owner/name#N``) whose fixes or quoting fixes are left out
    (``excluded``)."""
    roots = tuple(r.strip("/") for r in roots)
    folders = frozenset(r.rsplit("/", 1)[-1] for r in roots)
    rows = list(commits(git_dir, roots, since, ref))
    releases, first, by_number = releases_of(git_dir, tags, rows)
    blobs = Blobs(git_dir)
    fixes: list[list[str]] = []
    functions: dict[str, dict[str, list[list[object]]]] = {}
    for c in rows:
        if not c.is_fix() or (exclude or threads) and excluded(c, exclude, threads, source):
            continue
        index = len(fixes)
        release = first.get(c.sha, "")
        number = c.number
        if tags and number and number in by_number:
            alt = by_number[number]
            if not release or Version(alt) < Version(release):
                release = alt
        changed = False
        for f in c.files:
            root = next(
                (r for r in roots if f.path.startswith(r + "/") or f.old_path.startswith(r + "/")), None
            )
            if root is None or not (f.path or f.old_path).endswith(".py"):
                continue
            path = f.path or f.old_path
            module = path[len(root) + 1 :]
            names: dict[str, set[str]] = {}
            after = ""  # the file after the fix, without whitespace: a moved or rewrapped line is no evidence
            old_text = blobs.get(c.sha + "^", f.old_path) if f.old_path else ""
            before = _bare(old_text)  # the file before the fix: a line it held is no new code
            if f.path:
                text = blobs.get(c.sha, f.path)
                after = _bare(text)
                silent = unprinted(text)
                for name, lines in touched(spans_cached(text), f.added).items():
                    hashes = names.setdefault(name, set())
                    new = 0
                    for n in lines:  # lines the file before did not hold: only a run with the fix prints them
                        line = f.added_text.get(n, "")
                        if len(line.strip()) < MIN_LINE or new >= MAX_ADDED or n in silent:
                            continue
                        if _bare(line).rstrip(",") not in before:
                            hashes.add("+" + line_hash(line))
                            new += 1
            if f.old_path and f.removed:
                indents = {}  # an added line's text -> its indentations: a line moved into a new block
                for a in f.added_lines:
                    indents.setdefault(a.strip(), set()).add(len(a) - len(a.lstrip()))
                old = touched(spans_cached(old_text), f.removed)
                for name, lines in old.items():
                    hashes = names.setdefault(name, set())
                    for n in lines:
                        line = f.removed_lines.get(n, "")
                        if (
                            len(line.strip()) < MIN_LINE
                            or sum(not x.startswith("+") for x in hashes) >= MAX_HASHES
                        ):
                            continue
                        depth = len(line) - len(line.lstrip())
                        guarded = any(
                            d > depth for d in indents.get(line.strip(), ())
                        )  # under a new if / try
                        if guarded or _bare(line).rstrip(",") not in after:  # not just rewrapped
                            hashes.add(line_hash(line))
            for name, hashes in names.items():
                functions.setdefault(module, {}).setdefault(name, []).append([index, *sorted(hashes)])
                changed = True
        if changed:
            row: list[object] = [c.sha[:10], c.date, release, c.title[:MAX_SUBJECT], number]
            said = quoted(c.body, folders)
            if said:
                row.append(said)
            fixes.append(row)  # type: ignore[arg-type]
    blobs.close()
    head = git(git_dir, "rev-parse", ref).strip()
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "subdir": _subdir(git_dir, roots, ref),
        "head": head,
        "head_date": git(git_dir, "log", "-1", "--format=%cs", ref).strip(),
        "since": since,
        "releases": releases,
        "fixes": fixes,
        "functions": functions,
    }


def messages(git_dir: Path, since: str, ref: str = "HEAD") -> dict[str, Commit]:
    """The first-parent commits of ``ref`` since ``since`` by their 10-character SHA, with their
    messages only (no diffs: fast)."""
    out = git(
        git_dir,
        "log",
        "--first-parent",
        f"--since={since}",
        "--date=short",
        f"--format={_SEP}%H%x1f%ad%x1f%s%x1f%b%x1f",
        ref,
    )
    found: dict[str, Commit] = {}
    for chunk in out.split(_SEP)[1:]:
        parts = chunk.split("\x1f", 4)
        if len(parts) >= 4:
            found[parts[0][:10]] = Commit(parts[0], parts[1], parts[2], parts[3])
    return found


def prune(
    data: dict[str, object],
    git_dir: Path,
    exclude: frozenset[str],
    threads: frozenset[str] = frozenset(),
) -> dict[str, object]:
    """``data`` (a history ``derive`` wrote without exclusions) less the fixes ``excluded`` leaves
    out: what ``derive`` gives with them excluded (the fixes are independent of each other), from
    the commits' messages alone — a new held-out set's exclusions applied in seconds."""
    fixes = data["fixes"]
    functions = data["functions"]
    assert isinstance(fixes, list) and isinstance(functions, dict)
    found = messages(git_dir, str(data.get("since") or SINCE), str(data.get("head") or "HEAD"))
    source = str(data.get("source") or "")
    keep: dict[int, int] = {}
    kept: list[object] = []
    for i, row in enumerate(fixes):
        c = found.get(str(row[0]))
        if c is not None and excluded(c, exclude, threads, source):
            continue
        keep[i] = len(kept)
        kept.append(row)
    pruned: dict[str, dict[str, list[list[object]]]] = {}
    for module, names in functions.items():
        for name, rows in names.items():
            left = [[keep[r[0]], *r[1:]] for r in rows if r[0] in keep]
            if left:
                pruned.setdefault(module, {})[name] = left
    return {**data, "fixes": kept, "functions": pruned}


def _subdir(git_dir: Path, roots: tuple[str, ...], ref: str) -> str:
    """The folder of the repository that pip builds the package from (``pip install
    'git+URL@SHA#subdirectory=…'``): the nearest folder above the newest of ``roots`` that ``ref``
    has with a ``pyproject.toml`` or ``setup.py`` ("" for the repository's root)."""

    def has(path: str) -> bool:
        probe = subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{ref}:{path}"], capture_output=True
        )
        return probe.returncode == 0

    for root in reversed(roots):  # the newest layout last
        if not has(root):
            continue
        parts = root.split("/")[:-1]
        while parts:
            folder = "/".join(parts)
            if has(f"{folder}/pyproject.toml") or has(f"{folder}/setup.py"):
                return folder
            parts.pop()
        return ""
    return ""


def write(data: dict[str, object], out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    blob = gzip.compress(raw, 9, mtime=0)
    out.write_bytes(blob)
    return len(blob)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every package of PACKAGES (needs --mirrors)")
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors named owner+name/repo (or owner+name)")
    ap.add_argument("--only", action="append", default=[], help="with --all: this package only (repeatable)")
    ap.add_argument("--git-dir", type=Path)
    ap.add_argument("--package")
    ap.add_argument("--root", action="append", default=[], help="a folder of the package in the repository")
    ap.add_argument("--tags", default="", help="release-tag pattern; its first group is the version")
    ap.add_argument("--source", default="", help="owner/name of the repository (recorded)")
    ap.add_argument("--since", default="", help=f"first commit date read (default {SINCE}; SINCE_OF)")
    ap.add_argument(
        "--exclude", type=Path, help="a file of URLs (issues, PRs, commits) whose fixes are left out"
    )
    ap.add_argument(
        "--prune",
        type=Path,
        help="with --exclude: take the histories derived without exclusions from this folder and leave "
        "out the excluded fixes, reading only the commits' messages (the same files as a full run)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    args = ap.parse_args(argv)
    jobs: list[tuple[Path, str, tuple[str, ...], str, str]] = []
    if args.all:
        if args.mirrors is None:
            ap.error("--all needs --mirrors")
        for dist, (folder, repo, roots, tags) in PACKAGES.items():
            if args.only and dist not in args.only:
                continue
            base = args.mirrors / folder
            git_dir = base / "repo" if (base / "repo").is_dir() else base
            if not git_dir.is_dir():
                print(f"{dist}: no mirror at {base}; skipped", file=sys.stderr)
                continue
            jobs.append((git_dir, dist, roots, tags, repo))
    elif args.git_dir and args.package and args.root:
        jobs.append((args.git_dir, args.package, tuple(args.root), args.tags, args.source))
    else:
        ap.error("give --all --mirrors DIR, or --git-dir, --package and --root")
    threads = thread_keys(args.exclude) if args.exclude else frozenset()
    for git_dir, dist, roots, tags, repo in jobs:
        leave_out = exclusions(args.exclude, repo) if args.exclude and repo else frozenset()
        if args.prune is not None:
            with gzip.open(args.prune / f"{dist}.json.gz", "rt") as fh:
                data = prune(json.load(fh), git_dir, leave_out, threads)
        else:
            since = args.since or SINCE_OF.get(dist, SINCE)
            data = derive(git_dir, dist, roots, tags, since, repo, exclude=leave_out, threads=threads)
        if leave_out:
            print(f"{dist}: {len(leave_out)} excluded issues, PRs or commits of {repo}")
        size = write(data, args.out / f"{dist}.json.gz")
        fixes = data["fixes"]
        assert isinstance(fixes, list)
        print(f"{dist}: {len(fixes)} fixes, {len(data['releases'])} releases, {size} bytes")  # type: ignore[arg-type]
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"total {total} bytes in {args.out}")
    if total > args.budget:
        print(f"over the budget of {args.budget} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
