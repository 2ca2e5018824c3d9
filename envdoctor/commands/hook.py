"""``envdoctor hook FILE…``: the pre-commit / CI gate over GRPO and accelerate config files.

Each file is sorted by content (GRPO config, accelerate config, anything else is skipped) and
checked with no GPU and no network against the training stack the repository declares
(pyproject.toml, requirements files, lock files, environment.yml, Dockerfile: see
``envdoctor.facts.declared``), not the hook's own environment; the rules that need live GPU facts
(or a running vLLM server) are skipped and say so. An accelerate config is checked together with
a GRPO config of the same commit (same folder first), as ``accelerate launch --config_file <it>
train.py`` would run it.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envdoctor.commands.options import (
    emit,
    format_option,
    ignore_option,
    no_color_option,
    output_option,
    quiet_option,
    select_option,
    split_list,
    strict_option,
    use_color,
    verbose_option,
)

if TYPE_CHECKING:
    from envdoctor.facts.interface import Facts
    from envdoctor.report.interface import Report

NO_GPU = "needs live GPU facts: the hook checks config files, without a GPU"
NOT_LIVE = "needs the live machine (a running vLLM server): the hook checks files only"
NO_TRL = (
    "TRL is not installed where the hook runs (pre-commit's own environment): the package "
    "rules judge the training environment; run the envdoctor-system hook there"
)
KINDS = {"grpo": "GRPO config", "accelerate": "accelerate config"}
STACK_ONLY = "declared stack"
NO_COUNT = (
    "the process count is not known: no launch line of the repository (README, scripts, "
    "Makefile, slurm) runs this config and no accelerate config pairs with it; pass --launch "
    '"accelerate launch --num_processes N train.py" to judge the batch'
)
#: LAY023 judges the run's launch lines; the hook's own line is not the run's
NO_RUN_LINES = (
    "the launch line is the hook's own (the config under accelerate launch), not the run's: "
    "whether the repository starts a vLLM server before it (a README step, another terminal) is "
    "not known; pass --launch with the run's lines to judge it"
)
ALONE = (
    "no GRPO recipe or launch line of the repository uses this accelerate config: the known "
    "failures are judged for the run it belongs to"
)


@dataclass
class Target:
    """One check: a GRPO config, an accelerate config, or a pair of them."""

    grpo: str | None = None
    accelerate: str | None = None
    counts: tuple[int, ...] = ()  # the process counts the repository's launch lines give it
    script: str | None = None  # a script that builds its GRPOConfig in code (hook_scripts.py)
    unreadable: tuple[str, str] | None = None  # a config that is not valid YAML/JSON, and why
    #: only these rules (a script that builds no GRPOConfig in code but calls TRL's trainer with
    #: keywords: its config comes from elsewhere, so only its calls are judged, CFG008)
    only: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        broken = self.unreadable[0] if self.unreadable else None
        return " + ".join(p for p in (broken, self.script, self.grpo, self.accelerate) if p) or STACK_ONLY


def declares(paths: list[str]) -> bool:
    """Whether one of these files is a stack declaration (requirements, lock, Dockerfile…)."""
    from envdoctor.facts.declared import is_declaration

    return any(is_declaration(p) for p in paths)


def classify(paths: list[str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``({path: kind}, {path: why skipped}, {path: why unreadable})`` for the files pre-commit
    passed: a config that is not valid YAML / JSON is the third (CFG006 says it, the other files
    are judged)."""
    from envdoctor.errors import InputError, InvalidSyntax, UnreadableInput
    from envdoctor.facts.declared import is_declaration
    from envdoctor.parsing import read_mapping
    from envdoctor.plan.config_files import kind_of

    kinds: dict[str, str] = {}
    skipped: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    for path in paths:
        if is_declaration(path):
            continue  # a stack declaration (requirements, lock, Dockerfile…): the readers judge it
        try:
            kind = kind_of(read_mapping(path, "file"))
        except InvalidSyntax as exc:
            unreadable[path] = exc.problem  # a finding of its own, not a stop of the whole gate
            continue
        except UnreadableInput:
            raise  # missing, a device, oversized or hostile: exit 2 naming it, never a silent pass
        except InputError as exc:
            skipped[path] = exc.problem
            continue
        if kind == "grpo":
            from envdoctor.commands.hook_repo import grpo_or_why

            why = grpo_or_why(path, set(read_mapping(path, "file")), Path.cwd())
            if why is not None:
                skipped[path] = why
                continue
        if kind in KINDS:
            kinds[path] = kind
        else:
            skipped[path] = "neither a GRPO nor an accelerate config"
    return kinds, skipped, unreadable


def _partner(path: str, candidates: list[str]) -> str | None:
    """The candidate in the same folder as ``path``, else the only candidate, else none."""
    here = [c for c in candidates if Path(c).parent == Path(path).parent]
    if len(here) == 1:
        return here[0]
    return candidates[0] if len(candidates) == 1 else None


def pair(kinds: dict[str, str]) -> list[Target]:
    """Each GRPO config with the accelerate config and process counts the repository's launch
    lines give it, else the accelerate config of the commit (same folder, or the only one);
    the accelerate configs no GRPO config took are checked with their own partner or alone."""
    from envdoctor.commands.hook_repo import recipe

    grpo = [p for p, k in kinds.items() if k == "grpo"]
    acc = [p for p, k in kinds.items() if k == "accelerate"]
    targets = []
    for g in grpo:
        r = recipe(g, Path.cwd())
        targets.append(Target(grpo=g, accelerate=r.accelerate or _partner(g, acc), counts=r.counts))
    used = {t.accelerate for t in targets}
    launched = {g for g in grpo if recipe(g, Path.cwd()).launches}
    for a in (a for a in acc if a not in used):
        # a recipe the repository launches runs with the accelerate configs of its launch lines
        # only: an accelerate config none of them uses (fsdp.yaml beside zero3.yaml) is alone
        partner = _partner(a, grpo)
        targets.append(Target(grpo=None if partner in launched else partner, accelerate=a))
    return targets


def hook_facts(assume: list[str]):
    """``--installed``: this environment's installed packages, nothing else; ``--assume
    name==version`` overrides one. ``extra["trl_installed"]`` says whether the package rules can
    judge this environment."""
    from envdoctor.commands.hook_stack import parse_assume
    from envdoctor.facts.collect import collect_facts
    from envdoctor.facts.interface import Package

    facts = collect_facts(gpus=False)
    facts.env = {}  # the committing shell's variables are not the training job's
    facts.nvml_error = "not collected: the hook checks config files"
    facts.extra["trl_installed"] = facts.version("trl") is not None
    for name, version in parse_assume(assume).items():
        facts.packages[name] = Package(version=version)
    return facts


def offline_rules(facts: Facts, select: list[str] | None, ignore: list[str] | None) -> dict[str, str]:
    """Rules the hook cannot run, with why: GPU and live-machine rules (and the package rules
    when TRL is not installed where the hook runs)."""
    from envdoctor.checks.engine import matches
    from envdoctor.checks.registry import all_rules
    from envdoctor.rule_docs import rule_docs

    docs = rule_docs()
    out = {}
    for rule_id, entry in all_rules().items():
        doc = docs[rule_id]
        if select and not matches(rule_id, doc.name, select):
            continue
        if ignore and matches(rule_id, doc.name, ignore):
            continue
        if "gpus" in entry.needs or doc.area == "gpus":
            out[rule_id] = NO_GPU
        elif "live" in entry.needs:
            out[rule_id] = NOT_LIVE
        elif doc.area == "packages" and not facts.extra.get("trl_installed", True):
            out[rule_id] = NO_TRL
    from envdoctor.commands.hook_stack import skipped_rules

    for rule_id, why in skipped_rules(facts).items():
        if (
            rule_id in docs
            and not (select and not matches(rule_id, docs[rule_id].name, select))
            and not (ignore and matches(rule_id, docs[rule_id].name, ignore))
        ):
            out.setdefault(rule_id, why)
    return out


def _launch_line(target: Target, count: int | None) -> str:
    """``accelerate launch`` as the repository runs ``target`` (its process count, if known)."""
    words = ["accelerate", "launch"]
    if count is not None:
        words += ["--num_processes", str(count)]
    if target.accelerate:
        words += ["--config_file", shlex.quote(target.accelerate)]
    return " ".join([*words, shlex.quote(target.script) if target.script else "train.py"])


def _batch_under_every_count(
    report: Report,
    target: Target,
    facts: Facts,
    select: list[str] | None,
    ignore: list[str] | None,
    skip: dict,
) -> None:
    """The repository launches this recipe with several process counts: a batch that does not
    divide is a finding only when it fails under every one of them."""
    from envdoctor.doctor import check
    from envdoctor.plan.build import build_plan

    if "CFG002" in skip or not any(f.rule == "CFG002" for a in report.areas for f in a.findings):
        return
    for count in target.counts[1:]:
        plan = build_plan(
            config=target.grpo,
            accelerate_config=target.accelerate,
            launch=_launch_line(target, count),
            live=False,
        )
        _, other = check(facts, plan, select=["CFG002"], network=False)
        if not any(f.rule == "CFG002" for a in other.areas for f in a.findings):
            for area in report.areas:
                area.findings = [f for f in area.findings if f.rule != "CFG002"]
            return
    counts = ", ".join(map(str, target.counts))
    for area in report.areas:
        area.findings = [
            dataclasses.replace(
                f,
                message=f"{f.message} (under every process count the repository launches it with: {counts})",
            )
            if f.rule == "CFG002"
            else f
            for f in area.findings
        ]


def check_target(
    target: Target,
    facts: Facts,
    launch: str | None,
    select: list[str] | None,
    ignore: list[str] | None,
    suppress: list[Any] | None = None,
):
    """The report of one target, checked offline."""
    from envdoctor.doctor import check
    from envdoctor.plan.build import build_plan
    from envdoctor.rule_docs import rule_docs

    if target.unreadable is not None:
        return _unreadable_report(target.unreadable, facts, select, ignore, suppress)
    given = launch
    if launch is None and (target.accelerate or target.counts or target.script):
        launch = _launch_line(target, target.counts[0] if target.counts else None)
    plan = build_plan(config=target.grpo, accelerate_config=target.accelerate, launch=launch, live=False)
    if (
        target.grpo or target.script
    ):  # keys the repository's own dataclasses and GRPOConfig subclasses declare
        from envdoctor.plan.repository_keys import repository_keys_of

        plan.script_keys = {**repository_keys_of(str(Path.cwd())), **plan.script_keys}
        plan.repository_read = True
    if target.grpo and given is None and not target.script:
        facts = _with_repo_trainer(facts, target.grpo)
    skip = offline_rules(facts, select, ignore)
    if (launch is None and target.grpo) or (given is None and target.script and not target.counts):
        skip.setdefault("CFG002", NO_COUNT)
    if given is None and plan.use_vllm:
        skip.setdefault("LAY023", NO_RUN_LINES)
    if target.grpo is None and target.script is None:
        skip.setdefault("KNF001", ALONE)
    if target.script:
        from envdoctor.commands.hook_scripts import PATCHED, patched

        if patched(target.script):
            skip.setdefault("KNF001", PATCHED)
    if target.only:
        select = list(target.only)  # the hook adds such a target only where select admits them
    _, report = check(
        facts, plan, select=select, ignore=(ignore or []) + sorted(skip), network=False, suppress=suppress
    )
    if given is None and len(target.counts) > 1:
        _batch_under_every_count(report, target, facts, select, ignore, skip)
    docs = rule_docs()
    areas = {a.key: a for a in report.areas}
    for rule_id, why in skip.items():
        areas[docs[rule_id].area].skipped[rule_id] = why
    areas["gpus"].note = f"skipped: {NO_GPU}"
    if any(why == NO_TRL for why in skip.values()):
        areas["packages"].note = f"skipped: {NO_TRL}"
    if target.script:
        from envdoctor.commands.hook_scripts import locate_code

        locate_code(report, plan)
    _declared_view(report, facts, [p for p in (target.grpo, target.accelerate) if p])
    report.areas = [a for a in report.areas if a.key != "probe"]  # the probe needs the machine
    if not (
        target.grpo or target.accelerate or target.script
    ):  # the stack (and the repository's credentials)
        report.areas = [a for a in report.areas if a.key == "packages" or _secret_found(a)]
    report.subject = f"pre-commit: {target.label}"
    declared = (facts.extra.get("declared") or {}).get("files") or [] if facts else []
    report.artifact = target.script or target.grpo or target.accelerate or next(iter(declared), "")
    return report


def _with_repo_trainer(facts: Facts, grpo: str) -> Facts:
    """``facts`` with ``own_trainer`` when every script that runs this GRPO config (its launch
    lines', else, for a config no line runs, every launch line's of the repository) builds a
    trainer of the repository's own that is no GRPOTrainer (WncFht/RLCR's CustomTrainer, a
    transformers Trainer). Unchanged otherwise."""
    import copy

    from envdoctor.commands.hook_repo import launches_of
    from envdoctor.plan.script_reader import read_script

    root = Path.cwd()
    runs = launches_of(root)
    mine = runs.for_config(grpo)
    scripts = {ln.script for ln in (mine or [ln for ln in runs.launches if ln.config]) if ln.script}
    if (
        not scripts
        or len(scripts) > 8
        or any(not s.endswith(".py") or not (root / s).is_file() for s in scripts)
    ):
        return facts
    owns = [read_script(str(root / s)).own_trainer for s in sorted(scripts)]
    if not all(owns):
        return facts
    out = copy.copy(facts)
    where = "its launch lines' scripts" if mine else "every training script of the repository"
    out.extra = {**facts.extra, "own_trainer": f"{owns[0]} ({where})"}
    return out


def _unreadable_report(
    broken: tuple[str, str], facts: Facts, select: list[str] | None, ignore: list[str] | None, suppress: Any
):
    """The report of a config that is not valid YAML / JSON: CFG006, with the repository's
    launch lines that name it (then the run that uses it stops at start: an error)."""
    import copy

    from envdoctor.commands.hook_repo import launches_of
    from envdoctor.doctor import check
    from envdoctor.plan.build import build_plan

    path, problem = broken
    runs = launches_of(Path.cwd())
    named = list(
        dict.fromkeys(f"{ln.file}:{ln.line}" for ln in (*runs.for_config(path), *runs.for_accelerate(path)))
    )
    seen = copy.copy(facts)
    seen.extra = {
        **facts.extra,
        "unreadable_configs": [{"path": path, "problem": problem, "launches": named}],
    }
    _, report = check(
        seen, build_plan(live=False), select=select, ignore=ignore, network=False, suppress=suppress
    )
    report.areas = [a for a in report.areas if a.key == "config"]
    for area in report.areas:
        area.summary, area.note = f"config file {path}: not read (not valid YAML / JSON)", ""
    report.subject = f"pre-commit: {path}"
    report.artifact = path
    return report


def _secrets_of(files: list[str]) -> list[dict[str, Any]]:
    """The credentials written in the repository's files (read once a run)."""
    from envdoctor.plan.repo_secrets import repo_secrets

    key = (str(Path.cwd()), tuple(files))
    if key not in _SECRETS:
        _SECRETS.clear()
        _SECRETS[key] = [s.to_dict() for s in repo_secrets(Path.cwd(), files)]
    return _SECRETS[key]


_SECRETS: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}


def _has_secret(files: list[str]) -> bool:
    return bool(_secrets_of(files))


#: the rules of what the repository's files say as a whole (not one config's): said once
REPOSITORY_RULES = frozenset({"SEC001", *(f"REP{n:03d}" for n in range(1, 20))})


#: rules on the declared stack as a whole: a finding every report would repeat is said in the
#: first report that has it only
SAID_ONCE = frozenset({"DCL007", "DCL008"})


def _said_once(reports: list[Any], rules: frozenset[str]) -> None:
    """Drop from later reports the findings of ``rules`` an earlier report already says."""
    seen: set[tuple[str, str]] = set()
    for report in reports:
        for area in report.areas:
            kept = []
            for f in area.findings:
                key = (f.rule, f.message)
                if f.rule in rules and key in seen:
                    continue
                seen.add(key)
                kept.append(f)
            area.findings = kept


def _secret_found(area: Any) -> bool:
    return any(f.rule in REPOSITORY_RULES for f in area.findings)


def _repo_paths() -> dict[str, Any]:
    """What the repository's launch scripts and configs say as a whole (read once a run):
    missing launch paths, what bash does with the scripts as written, GPUs the launches of one
    run share, paths of the author's machine (the REP rules)."""
    from envdoctor.plan.repo_machine import repo_machine_paths
    from envdoctor.plan.repo_models import repo_model_paths
    from envdoctor.plan.repo_paths import repo_paths
    from envdoctor.plan.repo_shell import repo_shell

    key = str(Path.cwd())
    if key not in _PATHS:
        _PATHS.clear()
        _PATHS[key] = {**repo_paths(Path.cwd()), **repo_shell(Path.cwd()), **repo_machine_paths(Path.cwd())}
        _PATHS[key].update(repo_model_paths(Path.cwd()))
    return _PATHS[key]


_PATHS: dict[str, dict[str, Any]] = {}


def _with_secrets(facts: Facts, files: list[str]) -> Facts:
    """``facts`` (a copy) holding the credentials written in the repository's files: the first
    report of the run says them, once."""
    import copy

    found = _secrets_of(files)
    paths = _repo_paths()
    if not found and not any(paths.values()):
        return facts
    out = copy.copy(facts)
    out.extra = {**facts.extra, "committed_secrets": found, "repo_paths": paths}
    return out


def _declared_view(report: Report, facts: Facts, files: list[str]) -> None:
    """A declared stack's report: its summary line, "declared" wording, the file and line of
    each finding; the upgrade plan (pip commands for this machine) does not apply."""
    from envdoctor.commands import hook_stack

    if "declared" in facts.extra:
        pkgs = next(a for a in report.areas if a.key == "packages")
        if facts.extra.get("stack_checked"):
            pkgs.summary = hook_stack.summary(facts)
            hook_stack.reword(report)
            report.extra["declared_stack"] = {
                name: e.to_dict() for name, e in facts.extra["declared"]["stack"].items()
            }
        else:
            pkgs.summary, pkgs.note = "", hook_stack.NOT_CHECKED
        report.upgrade_plan = []
        notes = facts.extra["declared"].get("notes") or []
        if notes:
            report.extra["declared_notes"] = list(notes)
    hook_stack.locate(report, facts, files)


def _same(facts: Any, files: list[str]) -> Any:
    return facts


def _scoped(target: Target, facts: Any, given: bool, assume: Any, files: Any) -> Any:
    """A script's own folder's declared stack (hook_scripts.scoped_facts), else ``facts``
    (``given``: --installed or --requirements name the stack)."""
    if given or target.script is None:
        return facts
    from envdoctor.commands.hook_scripts import scoped_facts

    return scoped_facts(target.script, facts, list(assume), list(files))


def merge_junit(named: list[tuple[str, Any]]) -> str:
    """One JUnit document, a test suite per checked file (its name is the file)."""
    import xml.etree.ElementTree as ET

    from envdoctor.redact import clean
    from envdoctor.report import render

    root = ET.Element("testsuites")
    for label, report in named:
        label = clean(label)  # a file name: no secret, no raw control character, one line
        xml = render(report, "junit")
        for suite in ET.fromstring(xml).iter("testsuite"):  # noqa: S314 - our own output
            suite.set("name", f"envdoctor: {label}")
            for case in suite.iter("testcase"):
                case.set("classname", f"{case.get('classname')}[{label}]")
            root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _entry(label: str, target: Target | None) -> dict[str, Any]:
    """The JSON entry's names of what was checked: ``file`` the label shown (``a.yaml + b.yaml``
    for a pair), ``paths`` each file, ``grpo_config`` / ``accelerate_config`` by role."""
    grpo, acc = (target.grpo, target.accelerate) if target is not None else (None, None)
    script = target.script if target is not None else None
    broken = target.unreadable[0] if target is not None and target.unreadable else None
    return {
        "file": label,
        "paths": [p for p in (broken, script, grpo, acc) if p][:2],
        "grpo_config": grpo,
        "accelerate_config": acc,
        **({"script": script} if script else {}),
    }


def _render_all(
    named: list[tuple[str, Any]],
    fmt: str,
    verbose: bool,
    color: bool,
    targets: dict[str, Target] | None = None,
    quiet: bool = False,
) -> str:
    from envdoctor.report import render

    if fmt == "junit":
        return merge_junit(named)
    if fmt == "sarif":
        from envdoctor.redact import safe_report
        from envdoctor.report.sarif import render_many

        # the same pass render() gives every other format: secrets masked, values cut, escaped
        return render_many([safe_report(r, "sarif") for _, r in named], verbose=verbose)
    if fmt == "json":
        files = [
            {
                **_entry(label, (targets or {}).get(label)),
                "report": json.loads(render(r, "json", verbose=verbose)),
            }
            for label, r in named
        ]
        return json.dumps({"schema": "envdoctor.hook/1", "files": files}, indent=2) + "\n"
    from envdoctor.redact import clean

    parts = [
        f"── {clean(label)} ──\n{render(r, 'text', verbose=verbose, color=color, quiet=quiet)}"
        for label, r in named
    ]
    return "\n".join(parts)


def _scoped_stacks(
    targets: list[Any], facts: Any, given: bool, assume: Any, files: Any
) -> list[tuple[Any, Any]]:
    """The declared stacks of script folders that hold their own (``_scoped``), once each, with
    how to read each again from another folder (``hook --fix`` proving a requirement file's edit)."""
    from envdoctor.commands.hook_stack import declared_facts

    out: list[tuple[Any, Any]] = []
    seen: set[str] = set()
    for t in targets:
        if not t.script:
            continue
        scoped = _scoped(t, facts, given, assume, files)
        scope = str(Path(t.script).parent)
        if scoped is facts or scope in seen or "declared" not in (scoped.extra or {}):
            continue
        seen.add(scope)

        def again(folder: Path, scope: str = scope) -> Any:
            return declared_facts(list(assume), [], folder, list(files), scope=scope)

        out.append((scoped, again))
    return out


def _fix(
    targets, facts, line, select, ignore, assume, requirement_files, files, show_diff, calls=(), stacks=()
):
    """``--fix`` / ``--diff``: the proved changes written (or shown); the facts as they are
    after the writes (the declared stack read again when a pin was written)."""
    from envdoctor.commands.hook_fix import hook_fix
    from envdoctor.commands.hook_stack import declared_facts
    from envdoctor.redact import clean

    def reread(folder: Path, names: set[str]):
        kept = [a for a in assume if a.partition("==")[0].strip().lower().replace("_", "-") not in names]
        return declared_facts(kept, list(requirement_files), folder, list(files))

    skip = sorted(offline_rules(facts, select, ignore))

    def scan(folder: Path) -> dict[str, Any]:
        if folder == Path.cwd():
            return _repo_paths()
        from envdoctor.plan.repo_machine import repo_machine_paths
        from envdoctor.plan.repo_paths import repo_paths
        from envdoctor.plan.repo_shell import repo_shell

        return {**repo_paths(folder), **repo_shell(folder), **repo_machine_paths(folder)}

    done = hook_fix(
        targets,
        facts,
        line,
        select,
        (ignore or []) + skip,
        reread,
        Path.cwd(),
        show_diff,
        repository=scan,
        scripts=list(calls),  # added only where --select admits CFG008
        stacks=list(stacks),
    )
    if done.repo_written and not show_diff:
        _PATHS.clear()  # the reports read the edited scripts
        from envdoctor.plan.repo_config_calls import forget_scan

        forget_scan()
    if show_diff:
        click.echo(done.diff(), err=True, nl=False)
    for path, what in done.written.items():
        verb = "would fix" if show_diff else "fixed"
        click.echo(f"envdoctor: {verb} {clean(path)} ({clean(what)})", err=True)
    for note in done.notes:
        click.echo(f"envdoctor: not written: {clean(note)}", err=True)
    if (done.pins_written or done.repo_written) and not show_diff and "declared" in facts.extra:
        from envdoctor.commands.hook_stack import declared_facts as read_again

        return read_again(list(assume), list(requirement_files), Path.cwd(), list(files))
    return facts


@click.command()
@click.argument("files", nargs=-1, type=str)
@click.option(
    "--launch",
    multiple=True,
    metavar="CMD",
    help="The launch line the configs run under (default: accelerate launch with the "
    "committed accelerate config, if any).",
)
@click.option(
    "--requirements",
    "requirement_files",
    multiple=True,
    metavar="FILE",
    help="Read the declared stack from this file (requirements.txt, pyproject.toml, "
    "uv.lock, pylock.toml, poetry.lock, environment.yml, Dockerfile) instead of "
    "the ones found at the repository root; repeatable.",
)
@click.option(
    "--assume",
    multiple=True,
    metavar="NAME==VERSION",
    help="Judge for this package version (e.g. trl==0.15.2), overriding what the "
    "repository declares; repeatable.",
)
@click.option(
    "--installed",
    is_flag=True,
    help="Judge the packages installed where the hook runs (pre-commit runs in the "
    "training environment) instead of the declared stack.",
)
@click.option(
    "--fix",
    "apply_fix",
    is_flag=True,
    help="First write the changes envdoctor can prove (envdoctor fix): config keys into the "
    "GRPO configs given, package versions where the repository declares them.",
)
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="With --fix: show the changes as a unified diff (on stderr); write nothing.",
)
@select_option
@ignore_option
@format_option
@output_option
@verbose_option
@quiet_option
@no_color_option
@strict_option
def hook(
    files,
    launch,
    requirement_files,
    assume,
    installed,
    apply_fix,
    show_diff,
    select,
    ignore,
    fmt,
    output,
    verbose,
    quiet,
    strict,
) -> None:
    """Check the GRPO / accelerate config files among FILES (pre-commit passes them), offline.

    The packages judged are the ones the repository declares (pyproject.toml, requirements*.txt,
    uv.lock, pylock.toml, poetry.lock, environment.yml, Dockerfile at its root).

    \b
        envdoctor hook configs/grpo.yaml configs/accelerate.yaml --format junit -o envdoctor.xml
        envdoctor hook configs/grpo.yaml --requirements docker/requirements.txt --format sarif
    """
    from envdoctor.commands.check import launch_text
    from envdoctor.redact import clean, output_text
    from envdoctor.settings import load_settings

    settings = load_settings()
    select_ids = split_list(select) or settings.get("select") or None
    ignore_ids = split_list(ignore) or None
    suppress = settings.get("ignore") or None  # [tool.envdoctor] ignore: listed as suppressed
    strict = settings.get("strict", False) if strict is None else strict
    if installed and requirement_files:
        from envdoctor.errors import InputError

        raise InputError(
            "--installed",
            "judges this environment's packages; --requirements names a declared stack: give one of them",
        )
    from envdoctor.plan.repo_config_calls import forget_scan

    forget_scan()  # the repository as it is now, also when the hook runs twice in one process
    from envdoctor.facts.declared import links_out

    away = {f: why for f in files if (why := links_out(Path(f), Path.cwd()))}
    files = tuple(f for f in files if f not in away)  # a link out of the repository: not read
    kinds, skipped, unreadable = classify(list(files))
    skipped.update({f: why.split(": ", 1)[-1] for f, why in away.items()})
    targets = pair(kinds) + [Target(unreadable=item) for item in unreadable.items()]
    from envdoctor.commands.hook_scripts import script_runs

    targets += [Target(accelerate=a, counts=c, script=s) for s, a, c in script_runs(Path.cwd())]
    from envdoctor.checks.engine import matches
    from envdoctor.plan.repo_config_calls import call_scripts
    from envdoctor.rule_docs import rule_docs

    judged = {t.script for t in targets if t.script}
    name = rule_docs()["CFG008"].name
    if (not select_ids or matches("CFG008", name, select_ids)) and not (
        ignore_ids and matches("CFG008", name, ignore_ids)
    ):
        targets += [Target(script=s, only=("CFG008",)) for s in call_scripts(Path.cwd()) if s not in judged]
    if not targets and not installed and (requirement_files or declares(list(files))):
        targets = [Target()]  # a commit that changes only the stack: check the stack itself
    if not targets and (_has_secret(list(files)) or any(_repo_paths().values())):
        targets = [Target()]  # a commit of scripts only: their credentials (and paths) are still said
    if verbose and fmt == "text":
        for path, why in skipped.items():
            click.echo(f"envdoctor: skipped {clean(path)}: {clean(why)}", err=True)
    facts = None
    if targets:
        from envdoctor.commands.hook_stack import declared_facts

        facts = (
            hook_facts(list(assume))
            if installed
            else declared_facts(list(assume), list(requirement_files), Path.cwd(), list(files))
        )
        if verbose and fmt == "text":
            for note in (facts.extra.get("declared") or {}).get("notes") or []:
                click.echo(f"envdoctor: {clean(note)}", err=True)
    line = launch_text(launch, ())
    if (apply_fix or show_diff) and facts is not None:
        given = installed or bool(requirement_files)
        calls = [
            (t.script, _scoped(t, facts, given, assume, files)) for t in targets if t.only == ("CFG008",)
        ]
        stacks = _scoped_stacks(targets, facts, given, assume, files)
        facts = _fix(  # the configs written in scripts are not edited (hook_scripts.py)
            [t for t in targets if t.script is None and t.unreadable is None],
            facts,
            line,
            select_ids,
            ignore_ids,
            assume,
            requirement_files,
            files,
            show_diff,
            calls,
            stacks,
        )
    named = (
        [
            (
                t.label,
                check_target(
                    t,
                    (_with_secrets if i == 0 else _same)(
                        _scoped(t, facts, installed or bool(requirement_files), assume, files), list(files)
                    ),
                    line,
                    select_ids,
                    ignore_ids,
                    suppress,
                ),
            )
            for i, t in enumerate(targets)
        ]
        if facts is not None
        else []
    )  # facts are read when targets exist; the repository's credentials go to the first report
    _said_once([r for _, r in named], SAID_ONCE)
    if named or output:
        by_label = {t.label: t for t in targets}
        emit(
            _render_all(
                named,
                fmt,
                verbose,
                color=fmt == "text" and not output and use_color(),
                targets=by_label,
                quiet=quiet,
            ),
            output,
        )
    if output and fmt != "text" and named:  # CI logs still show what failed
        click.echo(output_text(_render_all(named, "text", verbose, color=False, quiet=quiet)), nl=False)
    sys.exit(max((r.exit_code(strict=bool(strict)) for _, r in named), default=0))
