"""The dataset a GRPO run names, found on this machine and read as a bounded sample.

A dataset is named by ``dataset_name`` (TRL's ``ScriptArguments``, open-r1, ``trl grpo``),
``dataset_config`` and ``dataset_train_split`` (default ``train``). It is read only when it is
here: a local file (JSON, JSON lines, CSV, Parquet, Arrow), a ``save_to_disk`` folder, a folder
of data files, or the Hugging Face caches (the ``datasets`` cache's Arrow files, else the hub
cache's data files). Nothing is downloaded. At most ``MAX_ROWS`` rows and ``MAX_BYTES`` bytes
of text are read; Parquet and Arrow are read with pyarrow when it is installed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_ROWS = 500
MAX_BYTES = 16 * 1024 * 1024
MAX_COLUMNS = 1000
FIRST_READ = 256 * 1024  # a text file is read in growing pieces until MAX_ROWS rows are parsed
DATA_EXTS = (".jsonl", ".json", ".csv", ".parquet", ".arrow")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")


@dataclass
class DataSample:
    """What was read: ``rows`` (at most ``MAX_ROWS``), or ``not_read`` saying why none were."""

    name: str
    split: str
    source: str = ""  # the file or folder the rows came from
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    not_read: str | None = None

    def as_evidence(self) -> dict[str, Any]:
        return {
            "dataset": self.name,
            "split": self.split,
            "source": self.source,
            "rows_read": len(self.rows),
            "columns": self.columns,
        }


def named_dataset(config: dict[str, Any]) -> tuple[str, str | None, str] | None:
    """(name or path, config name, train split) the run names, or None."""
    name = config.get("dataset_name") or config.get("dataset_path")
    if not isinstance(name, str) or not name.strip():
        return None
    sub = config.get("dataset_config")
    split = config.get("dataset_train_split")
    return (
        name.strip(),
        sub if isinstance(sub, str) and sub else None,
        split if isinstance(split, str) else "train",
    )


def datasets_cache(env: dict[str, str]) -> Path:
    """The ``datasets`` library's cache (``HF_DATASETS_CACHE``, else ``$HF_HOME/datasets``)."""
    if env.get("HF_DATASETS_CACHE"):
        return Path(env["HF_DATASETS_CACHE"]).expanduser()
    return _hf_home(env) / "datasets"


def hub_cache(env: dict[str, str]) -> Path:
    """The hub cache (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(var):
            return Path(env[var]).expanduser()
    return _hf_home(env) / "hub"


def _hf_home(env: dict[str, str]) -> Path:
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache"),
        "huggingface",
    )
    return Path(home).expanduser()


def read_dataset(name: str, subset: str | None, split: str, env: dict[str, str]) -> DataSample:
    """The first rows of ``split`` of the dataset ``name``, wherever it is on this machine."""
    sample = DataSample(name=name, split=split)
    try:
        files = _locate(name, subset, split, env)
    except (OSError, ValueError) as exc:  # a name too long for a path, a NUL byte, a permission
        sample.not_read = f"not checked ({getattr(exc, 'strerror', None) or exc})"
        return sample
    if files is None:
        sample.not_read = "not checked (not cached; nothing is downloaded)"
        return sample
    if not files:
        sample.not_read = f"not checked (no data file of split {split!r} found)"
        return sample
    sample.source = str(files[0] if len(files) == 1 else files[0].parent)
    for path in files:
        try:
            sample.rows.extend(_read_file(path, MAX_ROWS - len(sample.rows)))
        except _NotRead as exc:
            sample.not_read = f"not checked ({path.name}: {exc})"
            return sample
        except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            sample.not_read = f"not checked ({path.name} could not be read: {str(exc)[:200]})"
            return sample
        if len(sample.rows) >= MAX_ROWS:
            break
    columns: dict[str, None] = {}
    for row in sample.rows:
        columns.update(dict.fromkeys(str(k)[:200] for k in row))
        if len(columns) > MAX_COLUMNS:
            break
    sample.columns = list(columns)[:MAX_COLUMNS]
    if not sample.rows:
        sample.not_read = f"not checked ({sample.source} holds no rows)"
    return sample


class _NotRead(Exception):
    """A file that is here but not read (no pyarrow, too large for a bounded read)."""


def _locate(name: str, subset: str | None, split: str, env: dict[str, str]) -> list[Path] | None:
    """The data files of ``split`` (``[]``: here, but without that split), or None: not here."""
    local = Path(name).expanduser()
    if local.is_file():
        return [local]
    if local.is_dir():
        return _folder_files(local, split)
    if not _REPO_ID.match(name):
        return None
    arrow = _datasets_cache_files(name, subset, split, datasets_cache(env))
    if arrow:
        return arrow
    return _hub_files(name, split, hub_cache(env))


def _split_files(files: list[Path], split: str) -> list[Path]:
    """Files named for ``split`` (``train.jsonl``, ``train-00000-of-00002.parquet``, a ``train/``
    folder), else, when no file names any split, all of them."""
    pat = re.compile(rf"(^|[-_./]){re.escape(split)}([-_.]|$)")
    named = [f for f in files if pat.search(f.name) or f.parent.name == split]
    return sorted(named) if named else ([] if any(_names_a_split(f) for f in files) else sorted(files))


def _names_a_split(path: Path) -> bool:
    return bool(re.search(r"(^|[-_./])(train|test|validation|valid|dev|eval)([-_.]|$)", path.name))


def _folder_files(folder: Path, split: str) -> list[Path]:
    """A ``save_to_disk`` folder (Dataset or DatasetDict) or a folder of data files."""
    if (folder / "dataset_dict.json").is_file():
        return _folder_files(folder / split, split) if (folder / split).is_dir() else []
    state = folder / "state.json"
    if state.is_file() and state.stat().st_size < 1024 * 1024:
        data = json.loads(state.read_text(encoding="utf-8", errors="replace"))
        names = [d.get("filename") for d in data.get("_data_files", []) if isinstance(d, dict)]
        return [folder / n for n in names if isinstance(n, str) and (folder / n).is_file()]
    files = [p for p in _walk(folder, 3) if p.suffix in DATA_EXTS and not p.name.startswith(".")]
    return _split_files(files, split)


def _walk(folder: Path, depth: int) -> list[Path]:
    out: list[Path] = []
    try:
        entries = sorted(folder.iterdir())[:2000]
    except OSError:
        return out
    for entry in entries:
        if entry.is_dir() and depth > 0 and not entry.name.startswith("."):
            out.extend(_walk(entry, depth - 1))
        elif entry.is_file():
            out.append(entry)
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _datasets_cache_files(name: str, subset: str | None, split: str, root: Path) -> list[Path]:
    """``<root>/<namespace>___<name>/<config>/<version>/<hash>/<name>-<split>[-NNNNN-of-NNNNN].arrow``:
    the builder's folder name is the repository's in snake case, so it is matched normalised."""
    if not root.is_dir():
        return []
    want = _norm(name.replace("/", "___"))
    builders = [d for d in root.iterdir() if d.is_dir() and _norm(d.name) == want]
    best: list[Path] = []
    newest = -1.0
    for builder in builders:
        for cfg in builder.iterdir():
            if not cfg.is_dir() or (subset and cfg.name != subset):
                continue
            for arrow in cfg.glob(f"*/*/*-{split}*.arrow"):
                if not re.search(rf"-{re.escape(split)}(-\d+-of-\d+)?\.arrow$", arrow.name):
                    continue
                mtime = arrow.parent.stat().st_mtime
                if mtime > newest:
                    newest, best = mtime, []
                if mtime == newest:
                    best.append(arrow)
    return sorted(best)


def _hub_files(name: str, split: str, root: Path) -> list[Path] | None:
    repo = root / ("datasets--" + name.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    revs = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    for rev in revs:
        files = [p for p in _walk(rev, 4) if p.suffix in DATA_EXTS]
        if files:
            return _split_files(files, split)
    return []


def _read_file(path: Path, limit: int) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".arrow"):
        return _read_columnar(path, limit, suffix)
    if suffix == ".jsonl":
        return _read_json_lines(path, limit)
    size = FIRST_READ
    with open(path, "rb") as fh:
        while True:
            fh.seek(0)
            raw = fh.read(size + 1)
            truncated = len(raw) > size
            rows = _parse_text(raw[:size].decode("utf-8", errors="replace"), suffix, limit, truncated)
            if len(rows) >= limit or not truncated or size >= MAX_BYTES:
                return rows
            size = min(size * 4, MAX_BYTES)


def _parse_text(text: str, suffix: str, limit: int, truncated: bool) -> list[dict[str, Any]]:
    if suffix == ".csv":
        rows: list[dict[str, Any]] = []
        for row in csv.DictReader(io.StringIO(text)):
            if len(rows) > limit:
                break
            rows.append(dict(row))
        return rows[: limit if not truncated else min(limit, max(len(rows) - 1, 0))]
    return _read_json(text, limit, truncated)


def _read_json(text: str, limit: int, truncated: bool) -> list[dict[str, Any]]:
    """JSON lines, or a JSON array (its first objects, decoded one by one)."""
    stripped = text.lstrip()
    rows: list[dict[str, Any]] = []
    if stripped.startswith("["):
        decoder = json.JSONDecoder()
        pos = len(text) - len(stripped) + 1
        while len(rows) < limit:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text) or text[pos] == "]":
                break
            try:
                obj, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                if truncated:
                    break
                raise
            if isinstance(obj, dict):
                rows.append(obj)
        return rows
    for line in text.splitlines():
        if len(rows) >= limit:
            break
        if line.strip():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                if truncated:
                    break  # the last line cut by the byte bound
                raise
            if isinstance(obj, dict):
                rows.append(obj)
    return rows


def _read_json_lines(path: Path, limit: int) -> list[dict[str, Any]]:
    """JSON lines, one at a time: at most ``limit`` rows and ``MAX_BYTES`` bytes."""
    rows: list[dict[str, Any]] = []
    read = 0
    with open(path, "rb") as fh:
        while len(rows) < limit and read < MAX_BYTES:
            line = fh.readline(MAX_BYTES - read + 1)  # one line, never more than the bound
            if not line:
                break
            read += len(line)
            if read > MAX_BYTES:
                break
            if line.strip():
                obj = json.loads(line)
                if isinstance(obj, dict):
                    rows.append(obj)
    return rows


def _read_columnar(path: Path, limit: int, suffix: str) -> list[dict[str, Any]]:
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc
        import pyarrow.parquet as pq
    except ImportError:
        raise _NotRead("pyarrow is not installed to read it") from None
    if suffix == ".parquet":
        batches = pq.ParquetFile(path).iter_batches(batch_size=limit)
        batch = next(iter(batches), None)
        return [] if batch is None else list(batch.to_pylist())[:limit]
    source = pa.memory_map(str(path))
    try:
        reader: Any = ipc.open_stream(source)
    except pa.ArrowInvalid:
        reader = ipc.open_file(source)
        batches_f = [reader.get_batch(i) for i in range(min(reader.num_record_batches, 4))]
        return [r for b in batches_f for r in b.to_pylist()][:limit]
    rows: list[dict[str, Any]] = []
    for batch in reader:
        rows.extend(batch.slice(0, limit - len(rows)).to_pylist())
        if len(rows) >= limit:
            break
    return rows


_PACKAGED = ("json", "csv", "parquet", "arrow", "text")


def named_in_script(source: str) -> tuple[str, str | None, str] | None:
    """The dataset a script loads with literal arguments: ``load_dataset("org/name", "config",
    split="train")`` or ``load_dataset("json", data_files="data.jsonl")``; None when it names
    none, or several."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: set[tuple[str, str | None, str]] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _func_name(node.func) == "load_dataset" and node.args):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        name = _literal(node.args[0])
        sub = _literal(node.args[1]) if len(node.args) > 1 else _literal(kw.get("name"))
        split = (_literal(kw.get("split")) or "train").split("[")[0].split("+")[0].strip() or "train"
        if name in _PACKAGED:
            name, sub = _literal(kw.get("data_files")), None
        if name is None:
            return None  # a dataset named at run time: not known here
        found.add((name, sub, split))
    return found.pop() if len(found) == 1 else None


def _func_name(func: Any) -> str:
    import ast

    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _literal(node: Any) -> str | None:
    import ast

    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
