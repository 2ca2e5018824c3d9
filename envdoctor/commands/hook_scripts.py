"""The hook's checks of the scripts that build their GRPOConfig in code
(``envdoctor.plan.repo_config_calls``): one target each, launched as the repository's own launch
lines run it (their accelerate config and process count) when it has some, and each finding
located at the ``GRPOConfig(...)`` call that sets its key (file and line)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envdoctor.plan.interface import Plan
    from envdoctor.report.interface import Report

#: ``GRPOConfig(...) in path:line`` at the start of a key's origin
_WHERE = re.compile(r"\(\.\.\.\) in (?P<file>[^,]+?):(?P<line>\d+)\b")


def script_runs(root: Path) -> list[tuple[str, str | None, tuple[int, ...]]]:
    """``(script, accelerate config, process counts)`` per script of the repository that builds
    a GRPOConfig in code, as the repository's launch lines run it."""
    from envdoctor.commands.hook_repo import _count, launches_of
    from envdoctor.plan.repo_config_calls import config_scripts

    out: list[tuple[str, str | None, tuple[int, ...]]] = []
    for script in config_scripts(root):
        accelerate: str | None = None
        counts: list[int] = []
        for ln in launches_of(root).launches:
            if (ln.script or "").removeprefix("./") != script:
                continue
            acc = ln.accelerate
            if accelerate is None and acc and "*" not in acc and (root / acc).is_file():
                accelerate = acc.removeprefix("./")
            n = _count(ln, root)
            if n is not None and n not in counts:
                counts.append(n)
        out.append((script, accelerate, tuple(counts)))
    return out


def scoped_facts(script: str, facts: Any, assume: list[str], files: list[str]) -> Any:
    """The facts ``script`` is judged against: its own inline metadata (PEP 723 ``# /// script``
    dependencies) when it has some; else the declared stack of its own folder and those above
    it, when the repository declares another folder's stack too (a subproject's
    ``gaudi/requirements.txt`` is not the stack of ``grpo/train.py``); else ``facts``."""
    from envdoctor.commands.hook_stack import declared_facts, in_scope, inline_facts

    own = inline_facts(list(assume), Path.cwd(), script)
    if own is not None:
        return own  # the script's own inline metadata: what `uv run` installs for it
    files_read = ((facts.extra.get("declared") or {}).get("files") or []) if facts is not None else []
    scope = str(Path(script).parent)
    if scope == "." or not files_read:
        return facts
    root = Path.cwd()
    if all(in_scope(root / f.split(":", 1)[0], root, scope) for f in files_read):
        return facts
    key = (str(root), scope, tuple(assume), tuple(files))
    if key not in _SCOPED:
        _SCOPED[key] = declared_facts(list(assume), [], root, list(files), scope=scope)
    return _SCOPED[key]


_SCOPED: dict[tuple[Any, ...], Any] = {}


#: ``from unsloth import …`` / ``import unsloth``: unsloth rewrites TRL's trainers at import
_UNSLOTH = re.compile(r"(?m)^\s*(?:from\s+unsloth(?:_zoo)?\b|import\s+unsloth\b)")
PATCHED = (
    "the script imports unsloth, which rewrites TRL's trainers when it is imported: the known "
    "failures of TRL's own trainer code are not judged for it"
)


def patched(script: str) -> bool:
    """Whether ``script`` imports unsloth (TRL's GRPOTrainer then runs as unsloth rewrote it)."""
    from envdoctor.plan.script_reader import read_source

    data, _ = read_source(Path(script))
    return data is not None and _UNSLOTH.search(data.decode("utf-8", "replace")) is not None


def locate_code(report: Report, plan: Plan) -> None:
    """``file`` / ``line`` of each finding about a key the script's code sets: the call."""
    for area in report.areas:
        new = []
        for f in area.findings:
            ev: dict[str, Any] = dict(f.evidence)
            key = ev.get("key")
            m = _WHERE.search(plan.config_origin.get(key, "")) if isinstance(key, str) else None
            if m is not None:
                ev.setdefault("file", m["file"])
                ev.setdefault("line", int(m["line"]))
            new.append(dataclasses.replace(f, evidence=ev))
        area.findings = new
