"""The columns TRL's trainers read from the user's dataset, and where (``rules/knowledge/
trainer_columns.yaml``): which frame of a traceback is a trainer's data preparation reading a row's
column, and which is TRL's call of the reward functions.

A ``KeyError: 'text'`` is the dataset lacking a column only where the frames show it: the innermost
frame that is neither the datasets library's row (``formatting.py``'s ``__getitem__``) nor Python's
own is one of the table's data-preparation functions, its source line indexes a row by that column
(``features["prompt"]``) or by the config key that names it (``element[dataset_text_field]``), and
the trainer reads that column. A key the table does not list (a feature the trainer built itself,
``prompt_input_ids``), a KeyError in the user's code or in a config lookup, says nothing of the data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.triage.traceback import Frame, Traceback

_KEY = re.compile(r"['\"](?P<col>[\w.-]{1,80})['\"]")


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, Any], ...]:
    from envdoctor.resources import read_yaml, rules_dir

    data = read_yaml(rules_dir() / "knowledge" / "trainer_columns.yaml") or {}
    return tuple(t for t in data.get("trainers") or [] if isinstance(t, dict))


@dataclass(frozen=True)
class ColumnRead:
    """A trainer's data preparation reading a row's column the row lacks."""

    trainer: str  # "SFTTrainer"; "" where only TRL's shared data code shows
    column: str
    config_key: str  # the config key that names the column ("" where the code names it)
    frame: Frame
    listed: bool  # the log's TRL release reads it (or the log shows no release)


def _function(frame: Frame) -> str:
    return frame.function.rsplit(".", 1)[-1]


def _entry(frame: Frame) -> dict[str, Any] | None:
    if frame.package != "trl":
        return None
    path = frame.module_path.replace("\\", "/")
    return next(
        (
            t
            for t in _table()
            if path.endswith(str(t.get("file"))) and _function(frame) in (t.get("functions") or [])
        ),
        None,
    )


def _fits(spec: str, trl: str | None) -> bool | None:
    return versions.satisfies(trl, spec) if trl else None


def _releases(entry: dict[str, Any], trl: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the entry's releases the log's TRL falls in, all of them); every one where it shows none."""
    every = [r for r in entry.get("releases") or [] if isinstance(r, dict)]
    return [r for r in every if _fits(str(r.get("trl", "")), trl) is not False], every


def _innermost(tb: Traceback) -> Frame | None:
    """The innermost frame that is neither the datasets library's nor Python's own."""
    return next(
        (f for f in reversed(tb.frames) if f.package != "datasets" and not f.python_own),
        None,
    )


def column_read(tb: Traceback, trl: str | None) -> ColumnRead | None:
    """The trainer's read of a row's column that ``tb`` (a KeyError) is, or None (module docstring)."""
    if tb.name != "KeyError" or not tb.frames:
        return None
    key = _KEY.fullmatch(tb.message.strip()[:200])
    frame = _innermost(tb)
    entry = _entry(frame) if frame is not None else None
    if key is None or frame is None or entry is None:
        return None
    col = key.group("col")
    code = frame.code or ""
    now, every = _releases(entry, trl)
    config_key = ""
    literal = re.search(r"\w\[(?P<q>['\"])" + re.escape(col) + r"(?P=q)\]", code) is not None
    if not literal:  # a row indexed by the config key that names its column
        keys = {str(v) for r in every for v in (r.get("config") or {}).values()}
        config_key = next((k for k in sorted(keys) if re.search(r"\w\[" + re.escape(k) + r"\]", code)), "")
        if not config_key:
            return None
    reads_now = _reads(now, col, config_key)
    if not reads_now and not _reads(every, col, config_key):
        return None  # a key the trainer does not read from the user's rows
    trainer = str(entry.get("trainer") or "")
    if not trainer:  # TRL's shared data code: the trainer that called it, where a frame shows it
        outer = (_entry(f) for f in reversed(tb.frames) if f is not frame)
        trainer = next((str(e.get("trainer")) for e in outer if e is not None and e.get("trainer")), "")
    return ColumnRead(trainer, col, config_key, frame, bool(reads_now))


def _reads(releases: list[dict[str, Any]], col: str, config_key: str) -> bool:
    for r in releases:
        config = {str(k): str(v) for k, v in (r.get("config") or {}).items()}
        if config_key and config_key in config.values():
            return True
        if not config_key and col in (r.get("columns") or []):
            return True
    return False


def reward_call(frame: Frame, trl: str | None, any_release: bool = False) -> bool | None:
    """Whether ``frame`` is TRL's call of the reward functions: True where its source line calls
    one (``reward_func(``) in a function the table names for it (in any release: Unsloth's compiled
    copy of the trainer keeps TRL's names), or where TRL's own frame is the reward call of the log's
    release; ``any_release``: a function the table names for it, whatever the line (the caller
    checks the line itself); None where nothing tells."""
    fn = _function(frame)
    calls = [
        (str(c.get("trl", "")), list(c.get("functions") or []))
        for t in _table()
        for c in t.get("reward_call") or []
        if isinstance(c, dict)
    ]
    named = any(fn in names for _, names in calls)
    if named and (any_release or "reward_func(" in (frame.code or "")):
        return True
    if frame.package == "trl" and any(fn in names and _fits(spec, trl) is True for spec, names in calls):
        return True
    return None
