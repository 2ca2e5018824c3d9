"""``envdoctor hook --fix [--diff]``: the proved fixes written into the repository — config keys
into the GRPO config files the hook was given, package versions into the files that declare them
(``envdoctor.remedy.pin_edit``).

Each target's fix closure (``envdoctor.remedy.close``) proves its changes on facts + plan. The
pin edits are then proved as text: the declaration files, edited, are copied to a scratch folder
and read back by the declared-stack readers, and the rules run again on that stack; the pins are
written only when that run finds every edited version and no error or warning the closure did not
leave. ``--diff`` prints what would change and writes nothing.
"""

from __future__ import annotations

import difflib
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class HookFix:
    """What ``hook --fix`` did (or, with ``--diff``, would do)."""

    written: dict[str, str] = field(default_factory=dict)  # file -> what changed there
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # file -> (old, new)
    notes: list[str] = field(default_factory=list)  # what was not written, and why
    pins_written: bool = False

    def diff(self) -> str:
        return "".join(
            "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
                )
            )
            for path, (old, new) in self.texts.items()
            if old != new
        )


def _plan(target: Any, launch: str | None) -> Any:
    from envdoctor.plan.build import build_plan

    line = launch
    if line is None and target.accelerate:
        line = f"accelerate launch --config_file {shlex.quote(target.accelerate)} train.py"
    return build_plan(config=target.grpo, accelerate_config=target.accelerate, launch=line, live=False)


def _loud(findings: list[Any]) -> set[tuple[str, str]]:
    from envdoctor.remedy.closure import loud

    return {(f.rule, f.message) for f in findings if loud(f)}


def hook_fix(
    targets: list[Any],
    facts: Any,
    launch: str | None,
    select: list[str] | None,
    ignore: list[str] | None,
    reread: Any,
    root: Path,
    diff: bool,
) -> HookFix:
    """Prove and apply (``diff``: only show) every target's fixes. ``reread(folder, names)``
    gives the facts of the declared stack as the hook reads it from ``folder``, without the
    ``--assume`` of ``names`` (the pins written replace it): the pins' proof."""
    from envdoctor.commands.fix import config_edit
    from envdoctor.remedy import Rerun, close

    out = HookFix()
    packages: dict[str, str] = {}
    clashes: set[str] = set()
    closures = []
    for target in targets:
        plan = _plan(target, launch)
        closure = close(facts, plan, Rerun(select, ignore))
        closures.append(closure)
        changes = closure.changes.to_dict()
        if target.grpo:
            edit = config_edit(target.grpo, changes["config"])
            if edit is not None:
                out.texts[target.grpo] = edit
                out.written[target.grpo] = "config"
        for name, version in changes["packages"].items():
            if packages.setdefault(name, version) != version:
                clashes.add(name)
    for name in sorted(clashes):
        out.notes.append(f"{name}: the configs' fixes ask for different versions; no pin written")
        packages.pop(name)
    declared = (facts.extra.get("declared") or {}).get("stack")
    if packages and declared is None:  # --installed
        out.notes.append(
            "--installed judges this environment: no declared pin to edit; run "
            + "pip install "
            + " ".join(shlex.quote(f"{n}=={v}") for n, v in sorted(packages.items()))
        )
    elif packages and declared is not None:
        _pins(out, packages, declared, facts, closures, root, reread, select, ignore)
    if not diff:
        for path, (_old, new) in out.texts.items():
            _write(root / path if not Path(path).is_absolute() else Path(path), new)
    return out


def _pins(
    out: HookFix,
    packages: dict[str, str],
    declared: dict[str, Any],
    facts: Any,
    closures: list[Any],
    root: Path,
    reread: Any,
    select: list[str] | None,
    ignore: list[str] | None,
) -> None:
    from envdoctor.remedy import Rerun
    from envdoctor.remedy.pin_edit import pin_edits

    edits = pin_edits(root, {n: e.decls for n, e in declared.items()}, packages)
    for name, where, why in edits.refused:
        out.notes.append(f"{name}{' in ' + where if where else ''}: {why}")
    if not edits.changed:
        return
    files = [f for f in (facts.extra.get("declared") or {}).get("files") or [] if not Path(f).is_absolute()]
    with tempfile.TemporaryDirectory(prefix="envdoctor-pins-") as tmp:
        scratch = Path(tmp)
        for rel in dict.fromkeys([*files, *edits.texts]):
            src, dst = root / rel, scratch / rel
            if src.is_file() and src.resolve().is_relative_to(root.resolve()):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
        for rel, (_old, new) in edits.texts.items():
            (scratch / rel).write_text(new, encoding="utf-8")
        after = reread(scratch, set(packages))
    wrong = [
        f"{n} reads back as {after.version(n)}"
        for n, v in packages.items()
        if any(n in [x.split("==")[0] for x in xs] for xs in edits.done.values()) and after.version(n) != v
    ]
    rerun = Rerun(select, ignore)
    added: list[str] = []
    for closure in closures:
        left = _loud(closure.after)
        added += [f"{r}: {m[:120]}" for r, m in sorted(_loud(rerun(after, closure.plan)) - left)]
    if wrong or added:
        out.notes.append(
            "pins not written: the edited files, read back, do not give the proved stack ("
            + "; ".join(dict.fromkeys(wrong + added))
            + ")"
        )
        return
    for rel in edits.changed:
        out.texts[rel] = edits.texts[rel]
        out.written[rel] = ", ".join(edits.done.get(rel, []))
    out.pins_written = True


def _write(path: Path, text: str) -> None:
    from envdoctor.errors import InputError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot write it: {exc.strerror or exc}") from None
