"""The user's tokenizer as its files on this machine: chat template and a token counter.

The model's local directory or its hub cache snapshot (never downloaded). Tokens are counted
with the ``tokenizers`` library from ``tokenizer.json`` when both are here; otherwise the count
is an estimate (about four characters a token) and says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envdoctor.plan.data_source import hub_cache

MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_TOKENIZER_BYTES = 64 * 1024 * 1024
CHARS_PER_TOKEN = 4  # an estimate's divisor when no tokenizer can be loaded
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")


@dataclass
class TokenizerFiles:
    """``folder``: where the tokenizer's files are (None: not on this machine)."""

    model: str
    folder: Path | None
    chat_template: bool | None = None  # None: no tokenizer files to tell
    counter: Callable[[list[str]], list[int]] | None = None
    exact: bool = False  # counts from the tokenizer itself, not an estimate
    how: str = ""

    def count(self, texts: list[str]) -> list[int]:
        """Tokens of each text (one batch through the tokenizer), else the estimate."""
        if self.counter is not None:
            return self.counter(texts)
        return [(len(t) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN for t in texts]


def find_folder(model: str, env: dict[str, str]) -> Path | None:
    """The folder holding the model's tokenizer files, or None when not here."""
    try:
        local = Path(model).expanduser()
        if local.is_dir():
            return local
        if not _REPO_ID.match(model):
            return None
        snaps = hub_cache(env) / ("models--" + model.replace("/", "--")) / "snapshots"
        if not snaps.is_dir():
            return None
        ref = snaps.parent / "refs" / "main"
        if ref.is_file() and ref.stat().st_size < 256:
            commit = ref.read_text(errors="replace").strip()
            if re.fullmatch(r"[0-9a-f]{40}", commit) and (snaps / commit).is_dir():
                return snaps / commit
        revs = sorted(
            (p for p in snaps.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True
        )
        return revs[0] if revs else None
    except (OSError, ValueError):
        return None


def load(model: str, env: dict[str, str]) -> TokenizerFiles:
    """What the tokenizer files of ``model`` tell: chat template and a token counter."""
    folder = find_folder(model, env)
    tok = TokenizerFiles(model=model, folder=folder, how="estimated at ~4 characters a token")
    if folder is None:
        tok.how += f" ({model}'s tokenizer is not on this machine)"
        return tok
    cfg = _json(folder / "tokenizer_config.json")
    has_files = cfg is not None or (folder / "tokenizer.json").is_file()
    if has_files:
        template = cfg.get("chat_template") if cfg else None
        tok.chat_template = bool(template) or any(
            (folder / n).is_file() for n in ("chat_template.jinja", "chat_template.json")
        )
    tok_json = folder / "tokenizer.json"
    if tok_json.is_file() and tok_json.stat().st_size <= MAX_TOKENIZER_BYTES:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            tok.how += " (the tokenizers library is not installed)"
            return tok
        try:
            tokenizer = Tokenizer.from_file(str(tok_json))
        except Exception as exc:  # a file tokenizers cannot read: the estimate says why
            tok.how += f" ({tok_json.name} could not be loaded: {str(exc)[:120]})"
            return tok
        tok.counter = lambda texts: [
            len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)
        ]
        tok.exact = True
        tok.how = f"counted with {tok_json}"
    elif has_files:
        tok.how += f" (no tokenizer.json in {folder})"
    return tok


def _json(path: Path) -> dict[str, Any] | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
