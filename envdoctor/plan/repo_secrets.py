"""Credentials written into a repository's files: a Hugging Face token (``hf_…``), an OpenAI-style
key (``sk-…``) anywhere, a W&B API key (40 hex digits) where a W&B key name or ``wandb login``
stands before it: ``export WANDB_API_KEY=…``, ``--wandb_api_key …``, ``wandb login …``,
``wandb.login(key="…")``, ``wandb_api_key: …`` in YAML.

The hook reads the launch scripts, slurm files, Makefiles, notebooks, ``.env`` files, YAML / JSON
configs, Python and Markdown of the repository (a bounded walk) for them. A reference to a
variable (``${WANDB_API_KEY}``, ``$HF_TOKEN``, ``${{ secrets.X }}``) and a placeholder
(``hf_xxxx…``, ``<your key>``, ``000…``) are not secrets. What is kept of each is where it
stands and its kind, never the value.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from envdoctor.plan.repo_walk import walk

#: the files read: their names; how many, how big, how deep at most
PATTERNS = (
    "*.sh",
    "*.bash",
    "*.zsh",
    "*.slurm",
    "*.sbatch",
    "*.pbs",
    "Makefile",
    "*.mk",
    "*.ipynb",
    ".env",
    ".env.*",
    "*.env",
    "*.envrc",
    ".envrc",
    "*.yaml",
    "*.yml",
    "*.json",
    "*.toml",
    "*.cfg",
    "*.ini",
    "*.py",
    "*.md",
    "Dockerfile*",
)
MAX_FILES = 400
MAX_BYTES = 1024 * 1024  # a file larger than this is data, not a script: not read
MAX_TOTAL = 16 * 1024 * 1024
MAX_DEPTH = 6
MAX_FOUND = 50
_SKIP_DIRS = {
    ".git",
    "node_modules",
    "site-packages",
    "dist-packages",
    "build",
    "dist",
    "__pycache__",
    "venv",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}

KINDS = {
    "hf": "Hugging Face token",
    "wandb": "W&B API key",
    "openai": "OpenAI API key",
}
_HF = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])")
_OPENAI = re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])")
#: a W&B key name (``WANDB_API_KEY``, ``--wandb_api_key``, ``wandb-key``), ``wandb login`` or
#: ``wandb.login(key=``, then the key itself (a self-hosted server's ``local-`` prefix too)
_WANDB = re.compile(
    r"(?i:(?P<name>(?<![A-Za-z0-9])-{0,2}[A-Za-z_]*wandb[A-Za-z_-]*key)[\"']?\]?\s*(?:[=:,]|\s)\s*"
    r"|(?P<login>wandb\s+login(?:\s+--?[a-z-]{1,20})*\s+)"
    r"|(?P<call>wandb\.login\([^)\n]{0,200}?\bkey\s*=\s*))"
    r"[\"']?(?P<key>(?:local-)?[0-9a-f]{40})(?![0-9A-Za-z])"
)
_PLACEHOLDER_WORDS = (
    "xxxx",
    "your",
    "placeholder",
    "example",
    "changeme",
    "dummy",
    "fake",
    "redacted",
    "abcdefgh",
    "12345678",
    "token_here",
    "secret",
)


@dataclass(frozen=True)
class SecretSeen:
    """One credential in a repository file: where, its kind, the name it is given (if any)."""

    file: str
    line: int
    kind: str  # a key of KINDS
    name: str = ""  # WANDB_API_KEY, --wandb_api_key, wandb login … ("" for a bare token)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def placeholder(value: str) -> bool:
    """Whether ``value`` is an example, not a credential: a placeholder word, or too few
    distinct characters (``hf_aaaa…``, ``0000…``) to be a random key."""
    low = value.lower()
    body = low.split("_", 1)[-1] if low.startswith("hf_") else low.removeprefix("local-")
    if body.startswith("sk-"):
        body = body[3:]
    if any(w in low for w in _PLACEHOLDER_WORDS):
        return True
    if len(set(body)) <= 6:
        return True
    # sk-this-is-not-a-key-but-a-name: a real key mixes letters and digits
    return low.startswith("sk-") and not (re.search(r"[0-9]", body) and re.search(r"[A-Za-z]", body))


def scan_text(text: str, shown: str) -> list[SecretSeen]:
    """The credentials in one file's text (at most ``MAX_FOUND``)."""
    out: list[SecretSeen] = []
    if "hf_" not in text and "sk-" not in text and "wandb" not in text.lower():
        return out
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def line_at(pos: int) -> int:
        from bisect import bisect_right

        return bisect_right(starts, pos)

    for m in _HF.finditer(text):
        if not placeholder(m.group()):
            out.append(SecretSeen(shown, line_at(m.start()), "hf"))
    for m in _OPENAI.finditer(text):
        if not placeholder(m.group()):
            out.append(SecretSeen(shown, line_at(m.start()), "openai"))
    for m in _WANDB.finditer(text):
        if placeholder(m.group("key")):
            continue
        name = m.group("name") or ("wandb login" if m.group("login") else "wandb.login(key=…)")
        out.append(SecretSeen(shown, line_at(m.start("key")), "wandb", name.strip()))
    return sorted(set(out), key=lambda s: (s.line, s.kind))[:MAX_FOUND]


def _files(root: Path) -> list[Path]:
    return walk(
        root, PATTERNS, max_files=MAX_FILES, max_depth=MAX_DEPTH, skip_dirs=_SKIP_DIRS, skip_hidden_dirs=False
    )


def repo_secrets(root: Path, passed: list[str] | tuple[str, ...] = ()) -> list[SecretSeen]:
    """Every credential in the repository's files at ``root`` (the bounded walk) and in the
    files ``passed`` (the commit's), each once."""
    paths = _files(root)
    have = {p.resolve() for p in paths}
    for item in passed:
        p = root / item
        inside = p.resolve().is_relative_to(root.resolve())
        if inside and p.is_file() and not p.is_symlink() and p.resolve() not in have:
            paths.append(p)
            have.add(p.resolve())
    out: list[SecretSeen] = []
    total = 0
    for path in paths:
        try:
            size = path.stat().st_size
            if size > MAX_BYTES or total + size > MAX_TOTAL:
                continue
            total += size
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        try:
            shown = str(path.relative_to(root))
        except ValueError:
            shown = path.name
        out += scan_text(text, shown)
        if len(out) >= MAX_FOUND:
            break
    return out[:MAX_FOUND]
