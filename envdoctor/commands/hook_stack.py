"""The stack the hook judges: the repository's declared one (or, with ``--installed``, the
packages installed where the hook runs), and where each finding comes from (file and line)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envdoctor.errors import InputError, require_regular_file

if TYPE_CHECKING:
    from envdoctor.facts.interface import Facts
    from envdoctor.findings import Finding
    from envdoctor.report.interface import Report

NOT_CHECKED = (
    "not checked: no declared stack (pyproject.toml, requirements*.txt, uv.lock, "
    "pylock.toml, poetry.lock, environment.yml, Dockerfile) and no --assume; the "
    "config files are judged alone"
)
PARTIAL = "the stack is declared only in part: a package it does not name is not judged missing"
_KEY_LINE = r"^\s*[\"']?{key}[\"']?\s*:"


def parse_assume(items: list[str]) -> dict[str, str]:
    """``--assume NAME==VERSION`` items as {normalized name: version}."""
    from envdoctor import versions
    from envdoctor.facts.interface import normalize_name

    out: dict[str, str] = {}
    for item in items:
        name, sep, version = item.partition("==")
        if not (sep and name.strip() and version.strip()):
            raise InputError("--assume", f"expected NAME==VERSION, got {item!r}")
        if versions.parse(version.strip()) is None or len(version) > 64:
            raise InputError("--assume", f"{version.strip()!r} is not a version (e.g. 1.16.0)")
        out[normalize_name(name.strip())] = version.strip()
    return out


def inline_facts(assume: list[str], root: Path, script: str):
    """Facts of the stack a script declares for itself (PEP 723 inline metadata), or None."""
    from envdoctor.facts.declared.inline import read
    from envdoctor.facts.declared.resolve import stack_facts
    from envdoctor.knowledge import knowledge

    found = read(root / script, script)
    if found is None:
        return None
    assumed = parse_assume(assume)
    facts = stack_facts(found, assumed, knowledge(), f"declared: {script} (inline script metadata)")
    facts.extra["stack_checked"] = bool(found.declarations or assumed)
    facts.extra["stack_from_files"] = bool(found.declarations)
    return facts


def in_scope(path: Path, root: Path, scope: str) -> bool:
    """Whether the declaration ``path`` is in ``scope`` (a folder relative to ``root``) or a
    folder above it."""
    try:
        folder = path.parent.resolve().relative_to(root.resolve()).parts
    except ValueError:
        return True
    return Path(scope).parts[: len(folder)] == folder


def _run_record(path: str) -> bool:
    """A W&B run's record of the environment it ran in (``wandb/run-…/files/requirements.txt``):
    a past ``pip freeze``, not a declaration of the stack."""
    return "wandb" in Path(path).parts


def declared_facts(
    assume: list[str],
    requirement_files: list[str],
    root: Path,
    passed: Sequence[str] = (),
    scope: str | None = None,
):
    """Facts of the declared stack: ``--requirements`` files if given, else the declaration
    files found at ``root`` and those among ``passed`` (the commit's files); ``--assume``
    overrides single packages. ``scope`` (a folder below ``root``): only the declarations of
    that folder and the folders above it (a subproject's pins are not another folder's)."""
    from envdoctor.facts.declared import discover, read_stack, readmes, run_scripts
    from envdoctor.facts.declared.resolve import stack_facts
    from envdoctor.knowledge import knowledge

    assumed = parse_assume(assume)
    fallback: list[Path] = []
    if requirement_files:
        paths = []
        for item in requirement_files:
            path = Path(item) if Path(item).is_absolute() else root / item
            if not os.path.lexists(path):
                raise InputError(f"--requirements {item}", "no such file")
            require_regular_file(path, f"--requirements {item}")  # a FIFO, a device, a loop
            paths.append(path)
    else:
        from envdoctor.facts.declared import is_declaration

        paths = discover(root)
        paths += [
            p
            for p in (root / f for f in passed if is_declaration(f) and not _run_record(f))
            if p.is_file() and p.resolve() not in {q.resolve() for q in paths}
        ]
        if scope is not None:
            paths = [p for p in paths if in_scope(p, root, scope)]
        # a README's install steps, then a run script's, for what no file declares
        fallback = readmes(root) + run_scripts(root)
    found = read_stack(paths, root, fallback)
    source = "declared: " + ", ".join(found.files) if found.files else "--assume"
    facts = stack_facts(found, assumed, knowledge(), source)
    facts.extra["stack_checked"] = bool(found.declarations or assumed)
    facts.extra["stack_from_files"] = bool(found.declarations)
    return facts


def skipped_rules(facts: Facts) -> dict[str, str]:
    """Package rules that cannot judge this declared stack, with why."""
    from envdoctor.rule_docs import rule_docs

    declared = facts.extra.get("declared")
    if declared is None:
        return {}
    if not facts.extra.get("stack_checked"):
        return {rid: NOT_CHECKED for rid, doc in rule_docs().items() if doc.area == "packages"}
    stack = declared["stack"]
    out = {}
    for rule_id, name in (("PKG001", "vllm"), ("PKG008", "trl")):
        if name in stack or not facts.extra.get("stack_from_files"):
            out[rule_id] = (
                PARTIAL if name not in stack else f"{name} is declared ({stack[name].spec or 'any version'})"
            )
    return out


def summary(facts: Facts) -> str:
    """One line: what is decided (exact versions, and how) and what is left open."""
    stack = (facts.extra.get("declared") or {}).get("stack") or {}
    shown = ("trl", "vllm", "transformers", "torch", "accelerate", "deepspeed", "peft")
    parts, open_ = [], []
    for name in shown:
        e = stack.get(name)
        if e is None:
            continue
        if e.version:
            how = {
                "resolved": f"resolved from {e.spec or 'any'} for torch {facts.version('torch')}",
                "assumed": "--assume",
                "git": e.placed,
                "locked": e.origin.where if e.origin else "lock",
            }.get(e.how, e.origin.where if e.origin else "")
            parts.append(f"{name} {e.version} ({how})")
        else:
            open_.append(f"{name}{e.spec or ' (any version)'}")
    files = (facts.extra.get("declared") or {}).get("files") or []
    head = (
        f"declared in {', '.join(files[:4])}" + ("…" if len(files) > 4 else "") if files else "from --assume"
    )
    text = f"{head}: " + (", ".join(parts) or "no exact version")
    return text + (f"; open: {', '.join(open_)}" if open_ else "")


#: "not declared" is a warning: the training image may install it another way (a README step)
NOT_DECLARED = {"PKG001", "PKG008"}


def reword(report: Report) -> None:
    """Findings about a declared stack say "declared", not "installed"."""
    from envdoctor.findings import Severity

    for area in report.areas:
        if area.key not in ("packages", "config"):
            continue
        area.findings = [
            dataclasses.replace(
                f,
                message=re.sub(
                    r"\binstalled\b", "declared", f.message.replace("installed or declared", "declared")
                ),
                fix=re.sub(r"\bpip install ", "require ", f.fix),
                severity=Severity.WARNING if f.rule in NOT_DECLARED else f.severity,
            )
            for f in area.findings
        ]


def key_line(lines: list[str], key: str) -> int | None:
    """The line of a top-level ``key:`` among a YAML/JSON config's lines (None if not found)."""
    pattern = re.compile(_KEY_LINE.format(key=re.escape(key)))
    return next((i + 1 for i, line in enumerate(lines) if pattern.match(line)), None)


def _config_lines(config_files: list[str]) -> dict[str, list[str]]:
    """Each checked config file's lines, read once for every finding (unreadable: none)."""
    from envdoctor.errors import read_input_text
    from envdoctor.parsing import MAX_BYTES

    out: dict[str, list[str]] = {}
    for path in config_files:
        try:
            out[path] = read_input_text(path, path, MAX_BYTES).splitlines()
        except InputError:
            out[path] = []
    return out


def _declared_at(facts: Facts, name: str | None) -> tuple[str, int] | None:
    stack = ((facts.extra.get("declared") or {}).get("stack") or {}) if facts else {}
    e = stack.get(name or "")
    if e is None or not e.decls:
        return None
    pinned = [d for d in e.decls if d.pinned == e.version] or e.decls
    return pinned[0].file, pinned[0].line


_SUBJECT = {
    "PKG001": "trl",
    "PKG002": "vllm",
    "PKG003": "vllm",
    "PKG006": "vllm",
    "PKG007": "vllm",
    "PKG008": "trl",
}


def locate(report: Report, facts: Facts, config_files: list[str]) -> None:
    """Add ``file`` and ``line`` to each finding's evidence: the config key it is about, the
    declaration it is about, else the checked config file itself (line 1)."""
    lines = _config_lines(config_files)
    for area in report.areas:
        new = []
        for f in area.findings:
            ev = dict(f.evidence)
            where = _where(f, ev, facts, lines)
            if where is not None:
                ev.setdefault("file", where[0])
                ev.setdefault("line", where[1])
            new.append(dataclasses.replace(f, evidence=ev))
        area.findings = new


def _config_key(ev: dict, config_files: dict[str, list[str]]) -> tuple[str, int] | None:
    """The config line of the key the finding names (``key``), else of an evidence name that
    is a key of the config (``num_generations``)."""
    names = [ev["key"]] if isinstance(ev.get("key"), str) else []
    names += [k for k in ev if k not in ("key", "file", "line") and re.fullmatch(r"\w+", k)]
    for name in names:
        for path, lines in config_files.items():
            line = key_line(lines, name)
            if line is not None:
                return path, line
    return None


def _where(f: Finding, ev: dict, facts: Facts, config_files: dict[str, list[str]]) -> tuple[str, int] | None:
    from envdoctor.rule_docs import rule_docs

    doc = rule_docs().get(f.rule)
    if isinstance(ev.get("key"), str) or (doc is not None and doc.area != "packages"):
        found = _config_key(ev, config_files)
        if found is not None:
            return found
    if ev.get("declared_file"):
        return str(ev["declared_file"]), int(ev.get("declared_line") or 1)
    name = None
    if f.rule == "PKG004" and isinstance(ev.get("requirement"), str):
        from envdoctor.facts.packages import requirement_name

        name = requirement_name(ev["requirement"])
    name = name or ev.get("package") or _SUBJECT.get(f.rule)
    found = _declared_at(facts, name)
    if found is not None:
        return found
    return (next(iter(config_files)), 1) if config_files else None
