"""Models a repository's run loads from its own tree (``envdoctor hook``): a GRPO config's
``model_name_or_path`` or a launch line's ``--model_name_or_path`` / ``--model`` that names a path
the repository holds, which cannot load a model anywhere but the author's machine:

- a committed symlink whose target is not in the repository (``scripts/Qwen2.5-1.5B-Instruct ->
  /data1/…/Qwen2.5-1.5B-Instruct``): dangling on every other machine;
- a committed model folder (its ``config.json``) with no weight file: from_pretrained finds the
  folder first (a local directory wins over a Hub id of the same name) and stops without weights.

A path is looked for relative to the folders the run may start in: the repository's root, the
folder of the file that names it, and the folders of the repository's launch scripts. Not said
where a line of the repository downloads into the folder (``huggingface-cli download … --local-dir``,
``snapshot_download``, ``git lfs pull``). Bounded like the hook's other readers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from envdoctor.plan.repo_walk import read_texts, walk

CONFIG_PATTERNS = ("*.yaml", "*.yml")
SCRIPT_PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
MAX_FILES = 300
MAX_BYTES = 256 * 1024
MAX_DEPTH = 5
MAX_FOUND = 20
MAX_LISTED = 2000  # entries of one model folder looked at
_SKIP_DIRS = frozenset({".git", "node_modules", "site-packages", "__pycache__", "venv", ".venv", "wandb"})
#: config keys and launch options that name the model the run loads
MODEL_KEYS = frozenset({"model_name_or_path", "model", "model_path", "model_name"})
_OPTIONS = ("--model_name_or_path", "--model-name-or-path", "--model", "--model_path", "--model-path")
#: what holds a model's weights (transformers, PEFT adapters, GGUF, older checkpoints)
_WEIGHTS = re.compile(r"(?i)\.(safetensors|bin|pt|pth|ckpt|gguf|h5|msgpack|npz)$|\.index\.json$")
_DOWNLOADS = re.compile(
    r"(?i)\b(huggingface-cli\s+download|hf\s+download|snapshot_download|hf_hub_download|git\s+lfs\s+pull|"
    r"git\s+clone|modelscope\s+download|wget|curl|save_pretrained)\b"
)
_VAR = re.compile(r"\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}?")


def _expand(value: str, values: dict[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` replaced by what the script assigned it, else kept."""

    def one(m: re.Match[str]) -> str:
        return values.get(m["name"], m.group(0))

    return _VAR.sub(one, value)


def _named(root: Path, texts: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """(file, line, key or option, value) of the model paths the configs and launch lines name."""
    from envdoctor.errors import InputError
    from envdoctor.parsing import read_mapping
    from envdoctor.plan.config_files import kind_of
    from envdoctor.plan.shell_lines import command_runs, is_launch

    out: list[tuple[str, int, str, str]] = []
    for shown, text in texts.items():
        if shown.endswith((".yaml", ".yml")):
            if not any(k in text for k in MODEL_KEYS):
                continue
            try:
                data = read_mapping(str(root / shown), shown)
            except (InputError, OSError, ValueError):
                continue
            if kind_of(data) != "grpo":
                continue
            for key in sorted(MODEL_KEYS & set(data)):
                value = data[key]
                if isinstance(value, str) and value.strip():
                    at = next(
                        (n for n, t in enumerate(text.splitlines(), 1) if t.lstrip().startswith(key)), 1
                    )
                    out.append((shown, at, key, value.strip()))
            continue
        for number, run, values in command_runs(text):
            if not is_launch(run):
                continue
            for i, word in enumerate(run[:-1]):
                option, eq, value = word.partition("=")
                if option not in _OPTIONS:
                    continue
                value = _expand(value if eq else run[i + 1], values)
                if value and "$" not in value and not value.startswith("-"):
                    out.append((shown, number, option, value))
    return out


def _problem(entry: Path, root: Path) -> str | None:
    """Why the repository's entry at ``entry`` cannot load a model elsewhere, or None."""
    if entry.is_symlink():
        target = os.readlink(entry)
        if entry.exists():
            try:
                entry.resolve().relative_to(root.resolve())
                return None  # a link within the repository
            except (ValueError, OSError, RuntimeError):
                return f"a symlink to `{target}`, outside the repository: a path of the author's machine"
        return f"a symlink to `{target}`, which does not exist: a path of the author's machine"
    if not entry.is_dir() or not (entry / "config.json").is_file():
        return None
    try:
        names = [p.name for _, p in zip(range(MAX_LISTED), entry.rglob("*"), strict=False)]
    except OSError:
        return None
    if any(_WEIGHTS.search(n) for n in names):
        return None
    return "a model folder (config.json) with no weight file (*.safetensors, *.bin, …)"


def repo_model_paths(root: Path) -> dict[str, list[dict[str, Any]]]:
    """``{"model_paths": [{file, line, key, path, at, problem}]}`` of the repository."""
    from envdoctor.plan.repo_shell import is_vendored

    found = walk(
        root,
        (*CONFIG_PATTERNS, *SCRIPT_PATTERNS),
        max_files=MAX_FILES,
        max_depth=MAX_DEPTH,
        skip_dirs=_SKIP_DIRS,
        skip_hidden_dirs=True,
    )
    texts = read_texts(root, found, MAX_BYTES)
    starts = {Path(".")} | {Path(s).parent for s in texts if s.endswith(SCRIPT_PATTERNS[0][1:])}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for shown, line, key, value in _named(root, texts):
        if is_vendored(shown) or value.startswith(("/", "~")) or len(value) > 300 or len(out) >= MAX_FOUND:
            continue
        for start in sorted({Path(shown).parent, *starts}, key=str):
            rel = os.path.normpath((start / value).as_posix())
            if rel.startswith(".."):
                continue  # outside the repository
            entry = root / rel
            if not (entry.is_symlink() or entry.exists()):
                continue
            problem = _problem(entry, root)
            name = Path(rel).name
            downloaded = any(
                name in t and _DOWNLOADS.search(t) for text in texts.values() for t in text.splitlines()
            )
            if problem and not downloaded and rel not in seen:
                seen.add(rel)
                out.append(
                    {"file": shown, "line": line, "key": key, "path": value, "at": rel, "problem": problem}
                )
            break
    return {"model_paths": out}
