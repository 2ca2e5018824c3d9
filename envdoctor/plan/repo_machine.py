"""Paths of the author's machine that a repository's run needs (``envdoctor hook``): an absolute
path (``/home/<user>/…``, ``/mnt/…``, ``/data/…``, ``/workspace/…``) to a model, a dataset, a
config or an environment, written in a GRPO / accelerate config or in a launch script's launch,
``source`` or variable it launches with. A user of the repository does not have it unless they
rebuild the author's layout; the finding says which, and where the repository holds the same
file (``config/ds.json`` for ``/workspace/repo/config/ds.json``).

Not said: system locations (``/tmp``, ``/usr``, ``/opt``, ``/dev`` …), outputs (``output_dir``,
``--save_dir`` …: the run makes them), a path that a download or copy of the repository makes
(``huggingface-cli download … --local-dir PATH``, ``mkdir -p PATH``, ``snapshot_download(…)``),
and a path under a folder the repository's Dockerfile makes (``WORKDIR /workspace``). Bounded
like the other readers of the hook.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from envdoctor.plan.repo_walk import read_texts, walk

SCRIPT_PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
CONFIG_PATTERNS = ("*.yaml", "*.yml")
OTHER_PATTERNS = ("*.py", "*.md", "Dockerfile*", "*.dockerfile", "Makefile")
MAX_FILES = 400
MAX_BYTES = 512 * 1024
MAX_DEPTH = 6
MAX_FOUND = 50
MAX_VALUES = 2000  # values of one config looked at
_SKIP_DIRS = frozenset(
    {".git", "node_modules", "site-packages", "dist-packages", "__pycache__", "venv", ".venv", "wandb"}
)
#: an absolute path outside the system's own folders, at least two levels deep
_MACHINE = re.compile(
    r"^/(?!(?:tmp|dev|proc|sys|usr|etc|bin|sbin|lib|lib32|lib64|var|opt|run|boot|srv|snap|nix|"
    r"System|Library|Applications|private)(?:/|$))[^\s:;,'\"$`*?<>|]+/[^\s:;,'\"$`*?<>|]+$"
)
#: keys and options that name what the run writes, not what it reads
_OUTPUT = re.compile(
    r"(?i)^-*(?:output|out|save|log|logging|cache|hub|run|checkpoint|ckpt|download|report|"
    r"tensorboard|wandb|result|results)(?:[_-].*)?(?:dir|path|name|_to|_id|_strategy|_model_id)?$|"
    r"^-*(?:output_dir|output-dir|logging_dir|save_dir|cache_dir|download_dir|download-dir|local_dir|"
    r"local-dir|save_path|save-path)$"
)
#: commands that make a path as the repository's steps run (then the user gets it too)
_MAKES = re.compile(
    r"(?i)\b(?:huggingface-cli\s+download|hf\s+download|snapshot_download|hf_hub_download|"
    r"modelscope\s+download|local[_-]dir|mkdir|wget|curl|git\s+clone|cp\s|mv\s|ln\s|rsync|"
    r"gsutil|aws\s+s3|save_pretrained|to_parquet|to_json|save_to_disk|WORKDIR|COPY|ADD)\b"
)
_ABSOLUTE = re.compile(r"""[:\s'"=]/(?!(?:tmp|dev|usr|etc|opt|proc|sys)/)[A-Za-z_]""")
_VAR = re.compile(r"\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}?")


def machine_path(value: str) -> bool:
    """Whether ``value`` is an absolute path of someone's machine (not a system folder, not a
    placeholder such as ``/path/to/model`` or ``/home/user/your_data``)."""
    text = value.strip()
    return len(text) < 1000 and _MACHINE.match(text) is not None and not _placeholder_path(text)


_PLACEHOLDER_PARTS = frozenset({"xxx", "xxxx", "foo", "bar", "..."})


def _placeholder_path(path: str) -> bool:
    lower = path.lower()
    if "/path/to" in lower or "path_to" in lower or lower.startswith(("/home/user/", "/home/username/")):
        return True
    parts = lower.strip("/").split("/")
    return any(p in _PLACEHOLDER_PARTS or p.startswith(("your", "<", "{", "[")) for p in parts)


def _config_paths(
    data: Any, key: str = "", depth: int = 0, out: list[tuple[str, str]] | None = None
) -> list[tuple[str, str]]:
    """(key, value) of the machine paths a config's values name, outputs left out."""
    out = [] if out is None else out
    if depth > 6 or len(out) > MAX_VALUES:
        return out
    if isinstance(data, dict):
        for k, v in list(data.items())[:MAX_VALUES]:
            if isinstance(k, str) and _OUTPUT.match(k):
                continue
            _config_paths(v, str(k), depth + 1, out)
    elif isinstance(data, list):
        for v in data[:MAX_VALUES]:
            _config_paths(v, key, depth + 1, out)
    elif isinstance(data, str) and machine_path(data):
        out.append((key, data.strip()))
    return out


def _script_paths(text: str) -> list[tuple[int, str, str]]:
    """(line, option or command, path) of the machine paths a script's launches, ``source`` lines
    and the variables its launches use name."""
    from envdoctor.plan.shell_lines import command_runs, is_launch

    out: list[tuple[int, str, str]] = []
    for number, run, values in command_runs(text):
        if run[0] in ("source", ".") and len(run) > 1 and machine_path(run[1]):
            out.append((number, run[0], run[1]))
            continue
        if not is_launch(run):
            continue
        for i, word in enumerate(run[1:], start=1):
            before = run[i - 1]
            option, _, value = word.partition("=") if word.startswith("-") else (before, "", word)
            if word.startswith("-") and not value:
                continue
            if _OUTPUT.match(option) or _OUTPUT.match(before):
                continue
            value = _VAR.sub(partial(_known, values), value)
            if machine_path(value):
                out.append((number, option if option.startswith("-") else "(argument)", value))
    return out


def _known(values: dict[str, str], m: re.Match[str]) -> str:
    """A ``$NAME`` the script assigned, as assigned; any other left as written."""
    return values.get(m["name"], m.group(0))


def _made(path: str, lines: list[str]) -> bool:
    """Whether a line of the repository makes ``path`` or a folder above it (a download, a copy,
    a Dockerfile's WORKDIR)."""
    parts = PurePosixPath(path).parts
    prefixes = {"/".join(parts[:n]).replace("//", "/") for n in range(3, len(parts) + 1)}
    return any(any(p in line for p in prefixes) and _MAKES.search(line) for line in lines)


class _Made:
    """``_made`` over the repository's lines that make files, read on the first question (most
    repositories name no machine path: their files are never scanned for it)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.lines: list[str] | None = None

    def __call__(self, path: str) -> bool:
        if self.lines is None:
            self.lines = [
                ln
                for text in self.texts.values()
                if "/" in text
                for ln in text.splitlines()
                if "/" in ln and _MAKES.search(ln)
            ]
        return _made(path, self.lines)


def _held(path: str, files: set[str]) -> str:
    """The repository's own file that ``path`` is a copy of (the longest tail it holds), or ''."""
    parts = PurePosixPath(path).parts[1:]
    for n in range(len(parts) - 1, 0, -1):
        tail = "/".join(parts[-n:])
        if tail in files and (n >= 2 or "." in parts[-1]):
            return tail
    return ""


def repo_machine_paths(root: Path) -> dict[str, list[dict[str, Any]]]:
    """``{"machine_paths": [{file, line, paths: [{key, path, held}]}…]}`` of the repository."""
    from envdoctor.errors import InputError
    from envdoctor.parsing import read_mapping
    from envdoctor.plan.config_files import kind_of
    from envdoctor.plan.repo_shell import is_vendored

    found = walk(
        root,
        (*SCRIPT_PATTERNS, *CONFIG_PATTERNS, *OTHER_PATTERNS),
        max_files=MAX_FILES,
        max_depth=MAX_DEPTH,
        skip_dirs=_SKIP_DIRS,
        skip_hidden_dirs=True,
    )
    texts = read_texts(root, found, MAX_BYTES)
    from envdoctor.plan.repo_paths import _Index

    files = _Index(root).files
    made = _Made(texts)
    uses: list[dict[str, Any]] = []
    for shown, text in texts.items():
        if len(uses) >= MAX_FOUND * 4 or is_vendored(shown):
            continue
        named: list[tuple[int, str, str]] = []
        if shown.endswith((".yaml", ".yml")):
            if _ABSOLUTE.search(text) is None:
                continue  # no absolute path in it: not worth parsing
            try:
                data = read_mapping(str(root / shown), shown)
            except (InputError, OSError, ValueError):
                continue
            if kind_of(data) not in ("grpo", "accelerate"):
                continue
            for key, value in _config_paths(data):
                line = next((n for n, t in enumerate(text.splitlines(), 1) if value in t), 1)
                named.append((line, key, value))
        elif shown.endswith((".sh", ".bash", ".slurm", ".sbatch")):
            named = _script_paths(text)
        uses += [
            {"file": shown, "line": n, "key": k, "path": p, "held": _held(p, files)}
            for n, k, p in named
            if not made(p)
        ]
    return {"machine_paths": _grouped(uses)[:MAX_FOUND]}


def _grouped(uses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The uses by the machine folder they share (their first two levels: ``/mnt/data``), each
    group with the common prefix of its paths, its files and its first uses."""
    import os

    groups: dict[str, list[dict[str, Any]]] = {}
    for use in uses:
        top = "/".join(PurePosixPath(use["path"]).parts[1:3])
        groups.setdefault(top, []).append(use)
    out = []
    for members in groups.values():
        prefix = os.path.commonpath([m["path"] for m in members])
        files = list(dict.fromkeys(m["file"] for m in members))
        out.append(
            {
                "file": members[0]["file"],
                "line": members[0]["line"],
                "prefix": prefix,
                "files": files[:MAX_FOUND],
                "uses": members[:6],
                "count": len(members),
            }
        )
    return out
