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

from envdoctor.remedy.file_edit import decode, encode


@dataclass
class HookFix:
    """What ``hook --fix`` did (or, with ``--diff``, would do)."""

    written: dict[str, str] = field(default_factory=dict)  # file -> what changed there
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # file -> (old, new)
    notes: list[str] = field(default_factory=list)  # what was not written, and why
    pins_written: bool = False
    repo_written: bool = False  # the repository's own files (launch scripts, requirement files)
    secrets: set[str] = field(default_factory=set)  # the plans' (a folded YAML value's own line)

    def diff(self) -> str:
        """The unified diff of every file changed, each line redacted (the plans' secrets too)
        and its control characters escaped, as every other output."""
        from envdoctor.redact import clean

        text = "".join(
            "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
                )
            )
            for path, (old, new) in self.texts.items()
            if old != new
        )
        known = tuple(self.secrets)
        return "".join(clean(line, known, newlines=False) + "\n" for line in text.splitlines())


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
    repository: Any = None,
    scripts: list[tuple[str, Any]] | None = None,
    stacks: list[tuple[Any, Any]] | None = None,
) -> HookFix:
    """Prove and apply (``diff``: only show) every target's fixes. ``reread(folder, names)``
    gives the facts of the declared stack as the hook reads it from ``folder``, without the
    ``--assume`` of ``names`` (the pins written replace it): the pins' proof. ``repository(folder)``
    (when given) reads what the repository's launch scripts say there: the REP and DCL008 line
    edits are then proved and applied too."""
    from envdoctor.commands.fix import config_edit
    from envdoctor.redact import plan_secrets
    from envdoctor.remedy import Rerun, close

    out = HookFix()
    packages: dict[str, str] = {}
    clashes: set[str] = set()
    closures = []
    for target in targets:
        plan = _plan(target, launch)
        closure = close(facts, plan, Rerun(select, ignore))
        closures.append(closure)
        out.secrets |= plan_secrets(plan)
        changes = closure.changes.to_dict()
        if target.grpo:
            edit = config_edit(target.grpo, changes["config"])
            if edit is not None:
                out.texts[target.grpo] = edit
                out.written[target.grpo] = "config"
        _script_edits(out, closure, root, {target.grpo, target.accelerate})
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
    if repository is not None:
        _repository(out, facts, repository, select, ignore, lambda folder: reread(folder, set()), root)
        for scoped, again in stacks or []:  # a script folder's own stack (its requirement files)
            _repository(
                out, scoped, repository, select, ignore, again, root, rules=frozenset({"DCL008", "DCL010"})
            )
    if scripts:
        _script_calls(out, scripts, ignore, root)
    from envdoctor.remedy.file_edit import unwritable, write_file

    for path in list(out.texts):  # a link, a FIFO, a file out of the repository: said, not written
        why = unwritable(root / path, root)  # an absolute path stays itself under ``/``
        if why is not None:
            out.notes.append(f"{path}: {why}")
            del out.texts[path]
            out.written.pop(path, None)
    if not diff:
        for path, (_old, new) in out.texts.items():
            write_file(root / path, new, root)
    return out


#: the rules whose fixes edit the repository's own files (its launch scripts, its requirement
#: files): proved on a scratch copy of the repository, the readers run again on it
FILE_RULES = frozenset({f"REP{n:03d}" for n in range(1, 100)} | {"DCL008", "DCL010"})
#: folders never copied into the scratch repository (not read by the readers the proof runs)
_NOT_COPIED = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", "wandb", ".cache"}
#: files larger than this are not copied (data, weights: no reader of the proof opens them)
_COPY_MAX = 2 * 1024 * 1024


def _texts(root: Path, paths: dict[str, Any], declared: dict[str, Any] | None) -> dict[str, list[str]]:
    """The lines of each file a repository finding names (its edit is cut from them)."""
    names: set[str] = set()
    for found in paths.values():
        for seen in found if isinstance(found, list) else []:
            if isinstance(seen, dict):
                names.add(str(seen.get("file") or ""))
                names.update(str(u.get("file") or "") for u in seen.get("uses") or [] if isinstance(u, dict))
    names.update(str(p.get("file") or "") for p in (declared or {}).get("local_pins") or [])
    names.update(str(f) for f in (declared or {}).get("files") or [])  # a declared range's line (DCL010)
    out: dict[str, list[str]] = {}
    for name in sorted(n for n in names if n):
        path = root / name
        try:
            inside = path.resolve().is_relative_to(root.resolve())
            if inside and path.is_file() and path.stat().st_size <= _COPY_MAX:
                out[name] = decode(path.read_bytes()).splitlines()
        except (OSError, UnicodeError):
            continue
    return out


def _copy_tree(root: Path, dst: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = set()
        for n in names:
            p = Path(folder) / n
            if n in _NOT_COPIED or p.is_symlink():
                skip.add(n)
            elif p.is_file():
                try:
                    if p.stat().st_size > _COPY_MAX:
                        skip.add(n)
                except OSError:
                    skip.add(n)
        return skip

    shutil.copytree(root, dst, ignore=ignore, dirs_exist_ok=True)


def _repository(
    out: HookFix,
    facts: Any,
    scan: Any,
    select: list[str] | None,
    ignore: list[str] | None,
    reread: Any,
    root: Path,
    rules: frozenset[str] = FILE_RULES,
) -> None:
    """The repository rules' line edits (REP*, DCL008): each proved on a scratch copy of the
    repository with the edit applied (the shell and path readers, and the declared-stack reader
    for a requirement file, run again on it), then all of them together once more; only what
    holds is written. ``scan(folder)`` gives what the repository's launch scripts say there;
    ``reread(folder)`` the facts of the declared stack read there."""
    import copy

    from envdoctor.plan.interface import Plan
    from envdoctor.remedy import Rerun, close
    from envdoctor.remedy.closure import loud

    declared = facts.extra.get("declared") if facts is not None else None
    paths = scan(root)
    texts = _texts(root, paths, declared)
    if not texts:
        return
    base = copy.copy(facts)
    base.extra = {**facts.extra, "repo_paths": paths, "repo_texts": texts}
    declared_files = {str(p.get("file")) for p in (declared or {}).get("local_pins") or []}
    declared_files |= {str(f) for f in (declared or {}).get("files") or []}
    with tempfile.TemporaryDirectory(prefix="envdoctor-repo-") as tmp:
        scratch = Path(tmp)
        copied: list[bool] = []  # the copy is made when the first edit is proved
        written: dict[str, bytes] = {}
        seen: dict[tuple[tuple[str, str], ...], Any] = {}

        def again(now: Any, edited: dict[str, str]) -> Any:
            state = tuple(sorted(edited.items()))
            if state in seen:
                return seen[state]
            if not copied:
                _copy_tree(root, scratch)
                copied.append(True)
            for rel, data in written.items():  # the scratch copy as the repository holds it
                (scratch / rel).write_bytes(data)
            written.clear()
            for rel, text in edited.items():
                target = scratch / rel
                if target.is_file():
                    written[rel] = target.read_bytes()
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(encode(text, written.get(rel)))
            new = copy.copy(now)
            found = scan(scratch)
            extra = {**now.extra, "repo_paths": found}
            if declared is not None and declared_files & set(edited):
                extra["declared"] = reread(scratch).extra.get("declared")
            lines = _texts(scratch, found, extra.get("declared"))
            lines.update({k: v.splitlines() for k, v in edited.items()})
            extra["repo_texts"] = lines
            new.extra = extra
            seen[state] = new
            return new

        done = {str(k) for k in out.texts}  # a file an earlier stack's fixes edited: theirs

        def wanted(f: Any) -> bool:
            return loud(f) and f.rule in rules and str(f.evidence.get("declared_file") or "") not in done

        closure = close(base, Plan(), Rerun(select, ignore, reread=again), wanted=wanted)
    for rule, why in closure.unfixed:
        out.notes.append(f"{rule}: {why}")
    _take_edits(out, closure, root)


def _take_edits(out: HookFix, closure: Any, root: Path) -> None:
    """The closure's line edits into ``out`` (on top of the edits already there)."""
    from envdoctor.remedy.file_edit import EditError, key, texts_after

    if not closure.changes.files:
        return
    try:
        after = texts_after(closure.changes.files, {k: v[1] for k, v in out.texts.items()})
    except EditError as exc:
        out.notes.append(f"line edits: {exc}")
        return
    mine = {key(e.path) for e in closure.changes.files}
    for rel, new in after.items():
        if key(rel) not in mine:
            continue
        old = out.texts[rel][0] if rel in out.texts else decode((root / rel).read_bytes())
        if new != old:
            out.texts[rel] = (old, new)
            rules = ", ".join(
                dict.fromkeys(r for r, c in closure.steps if any(key(e.path) == key(rel) for e in c.files))
            )
            what = f"line edits ({rules})"
            out.written[rel] = f"{out.written[rel]}; {what}" if rel in out.written else what
            out.repo_written = True


def _script_edits(out: HookFix, closure: Any, root: Path, configs: set[Any]) -> None:
    """The line edits ``fix`` proved for a target (its training script's ``GRPOConfig(...)``
    keywords, …), written as the config's and the pins' are: only to files inside the
    repository (a path that leaves it, or a link out of it, is said and not written); the config
    files themselves get their edit from ``config_edit``."""
    from types import SimpleNamespace

    from envdoctor.remedy.file_edit import key

    base = root.resolve()
    skip = {key(str(c)) for c in configs if c}
    inside = []
    for edit in closure.changes.files:
        if key(edit.path) in skip:
            continue
        path = Path(edit.path) if Path(edit.path).is_absolute() else root / edit.path
        try:
            rel = path.resolve().relative_to(base)
        except (OSError, ValueError):
            out.notes.append(f"{edit.path}: outside the repository; its line edit is not written")
            continue
        inside.append(edit if not Path(edit.path).is_absolute() else _moved(edit, str(rel)))
    if inside:
        _take_edits(out, SimpleNamespace(changes=SimpleNamespace(files=inside), steps=closure.steps), root)


def _moved(edit: Any, path: str) -> Any:
    from dataclasses import replace

    return replace(edit, path=path)


def _script_calls(out: HookFix, scripts: list[tuple[str, Any]], ignore: list[str] | None, root: Path) -> None:
    """CFG008 in the repository's training scripts (a keyword TRL's trainer does not take): the
    call edited in the script, proved on the script's text in memory (its facts: the stack of
    its own folder, as the hook judges it)."""
    from envdoctor.plan.build import build_plan
    from envdoctor.remedy import Rerun, close

    for script, facts in scripts:
        plan = build_plan(launch=f"python {shlex.quote(script)}", live=False)
        closure = close(facts, plan, Rerun(["CFG008"], ignore))
        for rule, why in closure.unfixed:
            out.notes.append(f"{rule} in {script}: {why}")
        _take_edits(out, closure, root)


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
