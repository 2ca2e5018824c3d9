"""A remedy applied to a copy of the inputs (facts, plan), and remedies merged into one change.

Nothing here reads a file or the machine: the config mapping, the environment, the launch lines
and the package versions are changed in memory, as ``--assume`` changes versions.
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import replace
from typing import Any

from envdoctor.facts.interface import Facts, Package, normalize_name
from envdoctor.findings import FileEdit, Remedy
from envdoctor.plan.build import relaunch
from envdoctor.plan.interface import Launch, Plan, from_code
from envdoctor.plan.script_file import script_file
from envdoctor.plan.shell_words import join as shell_join
from envdoctor.remedy.file_edit import key as file_key
from envdoctor.remedy.file_edit import read_text, reread_plan, texts_after
from envdoctor.remedy.script_edit import code_edits

#: the origin a key set by a fix gets when the run has no config file
FIX_ORIGIN = "fix"


def launch_lines(plan: Plan) -> tuple[str, ...]:
    """Every line of the run as ``check`` takes them: the server lines first, the trainer last."""
    servers = [lx.raw for lx in plan.launches if lx.is_server]
    others = [lx.raw for lx in plan.launches if not lx.is_server]
    return tuple(dict.fromkeys([*servers, *others]))


def apply(facts: Facts, plan: Plan, remedy: Remedy) -> tuple[Facts, Plan, Remedy]:
    """Copies of ``facts`` and ``plan`` with ``remedy`` applied, and the remedy as it was
    applied: a config key the command line sets is changed on the launch line instead (the
    command line overrides the file, so only there does the change hold)."""
    facts = _copy_facts(facts)
    for name, version in remedy.packages.items():
        facts.packages[normalize_name(name)] = Package(version=version)
    env_set, env_unset = dict(remedy.env_set), tuple(remedy.env_unset)
    for key in env_unset:
        facts.env.pop(key, None)
    facts.env.update(env_set)
    lines = list(remedy.launch) if remedy.launch is not None else None
    config_set, config_remove = dict(remedy.config_set), list(remedy.config_remove)
    on_line = [k for k in [*config_set, *config_remove] if plan.config_origin.get(k) == "command line"]
    by_flag = _flag_edits(plan, config_set, on_line)
    # a key taken off the line uncovers what the config file (and the script's code) set under it
    line_removed = [k for k in on_line if k in config_remove and k not in config_set]
    under_line = [k for k in line_removed if k in _file_keys(plan)]
    if (on_line or by_flag) and plan.trainer is not None:
        current = list(lines) if lines is not None else list(launch_lines(plan))
        trainer = plan.trainer.raw
        for i, line in enumerate(current):
            if line == trainer:
                for key in on_line:
                    line = script_arg_edit(line, key, config_set.get(key, _REMOVE))
                    config_set.pop(key, None)
                    if key in config_remove:
                        config_remove.remove(key)
                for key, (option, value) in by_flag.items():
                    line = script_arg_edit(line, option, value)
                    config_set.pop(key, None)
                current[i] = line
        lines = current
    hydra = _hydra_edits(plan, config_set, config_remove)
    if hydra and plan.trainer is not None:  # Hydra's overrides on the line: what the script composes
        current = list(lines) if lines is not None else list(launch_lines(plan))
        trainer = plan.trainer.raw
        current = [_hydra_line(line, hydra) if line == trainer else line for line in current]
        for key in hydra:
            config_set.pop(key, None)
            if key in config_remove:
                config_remove.remove(key)
        lines = current
    touched = [k for k in [*env_set, *env_unset] if any(k in lx.env for lx in plan.launches)]
    if touched:  # a variable the launch line sets: changed there, where it wins
        current = list(lines) if lines is not None else list(launch_lines(plan))
        for key in touched:
            current = [env_prefix_edit(line, key, env_set.get(key)) for line in current]
        lines = current
    edited = dict(plan.edited)
    if lines is not None:
        plan = relaunch(plan, lines)
    else:
        plan = _copy_plan(plan)
    if remedy.files or edited:  # the files as the fixes left them, and what the plan reads there
        plan.edited = texts_after(remedy.files, edited)
        edited_now = {file_key(e.path) for e in remedy.files}
        reread_plan(plan, edited, edited_now, relaunched=lines is not None)
        read = plan.script
        if (
            lines is None
            and read is not None
            and read.path
            and any(file_key(f) in edited_now for f in (read.path, *read.files))
            and plan.trainer is not None
            and script_file(plan.trainer)
        ):
            # an edit of the training script's own text (``num_generations=1`` -> ``8`` at its
            # line): what its GRPOConfig(...) calls set is read again from the edited text
            plan = relaunch(plan, [lx.raw for lx in plan.launches])
    for launch in plan.launches:  # set elsewhere on the line (an `export` before it)
        _edit_launch_env(launch, env_set, env_unset)
    origin = f"config file {plan.config_path}" if plan.config_path else FIX_ORIGIN
    config_remove += [k for k in under_line if k not in config_remove]
    from_file = [k for k in config_remove if plan.config_origin.get(k, "").startswith("config file")]
    # a key of the config file the script loads itself and reads besides handing it to GRPOConfig
    # (``build_dataset(cfg["max_prompt_length"])``): it stays in the file (taken out, the
    # script's own read stops on a KeyError); the GRPOConfig keyword that passes it is dropped
    kept = _read_by_script(plan, from_file)
    for key in kept:
        config_remove.remove(key)
        from_file.remove(key)
    in_code = [
        k for k in dict.fromkeys([*config_remove, *line_removed]) if from_code(plan.config_origin.get(k, ""))
    ]
    in_code += [k for keywords, _ in kept.values() for k in keywords if k not in in_code]
    for key in config_remove:
        plan.config.pop(key, None)
        plan.config_origin.pop(key, None)
    if from_file and plan.trainer is not None and script_file(plan.trainer):
        # the file's key hid what the script's own GRPOConfig(...) sets: read the script again
        plan = relaunch(plan, [lx.raw for lx in plan.launches])
        in_code += [k for k in from_file if from_code(plan.config_origin.get(k, ""))]
    code_set = {k: v for k, v in config_set.items() if from_code(plan.config_origin.get(k, ""))}
    # a key the config file sets that the script's GRPOConfig(...) call also writes as the same
    # literal, where the script reads no config file (no HfArgumentParser / TrlParser, no
    # yaml.safe_load): the literal is what runs, so it is given the value too
    # (``num_generations=1`` at its line); a literal of another value is not the one judged
    calls = plan.script  # its GRPOConfig(...) calls, as read
    literal = (
        {
            k: v
            for k, v in config_set.items()
            if k not in code_set
            and calls.config_keywords.get(k)
            and k in calls.code_values
            and calls.code_values[k] == plan.config.get(k)
        }
        if calls is not None and not calls.reads_config and not calls.problem
        else {}
    )
    script_edits: tuple[FileEdit, ...] = ()
    if in_code or code_set or literal:
        # what the script's own GRPOConfig(...) sets runs whatever the config file says: the
        # keyword is taken out of (or given the value in) the call, and the script read again
        script_edits = code_edits(plan.script, in_code, {**code_set, **literal})
        plan.edited = texts_after(script_edits, plan.edited)
        plan = relaunch(plan, [lx.raw for lx in plan.launches])
        for key in code_set:
            config_set.pop(key)
    for key, value in config_set.items():
        plan.config[key] = value
        plan.config_origin.setdefault(key, origin)
    applied = replace(
        remedy,
        config_set=config_set,
        config_remove=tuple(config_remove),
        launch=tuple(lines) if lines is not None else None,
        files=(*remedy.files, *script_edits),
    )
    if kept:
        applied = replace(applied, fix=_kept_said(plan, remedy, kept))
    if by_flag and lines and remedy.fix:  # said as what the user types
        script = plan.script.path if plan.script is not None else "the script"
        said = [
            f"drop --{opt}"
            if isinstance(v, _Remove)
            else f"pass --{opt}" + ("" if isinstance(v, _Bare) else f" {_arg_text(v)}")
            for opt, v in by_flag.values()
        ]
        keys = ", ".join(by_flag)
        applied = replace(applied, fix=f"{', '.join(said)} ({script}'s own option for {keys}): {lines[-1]}")
    return facts, plan, applied


def _read_by_script(plan: Plan, from_file: list[str]) -> dict[str, tuple[list[str], str]]:
    """The keys of ``from_file`` the training script reads itself from the config file it loads
    (``TrainingScript.own_reads``) and hands to GRPOConfig keywords it writes: key -> (those
    keywords, each one a line edit can cut; where the script reads it itself)."""
    script = plan.script
    if script is None or script.problem or not script.own_reads:
        return {}
    out: dict[str, tuple[list[str], str]] = {}
    for key in from_file:
        keywords = [k for k, read in script.keyword_reads.items() if read == key]
        if key in script.own_reads and keywords and all(script.config_keywords.get(k) for k in keywords):
            out[key] = (keywords, script.own_reads[key])
    return out


def _kept_said(plan: Plan, remedy: Remedy, kept: dict[str, tuple[list[str], str]]) -> str:
    """The fix said where a key stays in the config file: the keyword dropped at the call."""
    said = "; ".join(
        f"keep `{key}` in {plan.config_path} ({where} reads it itself); drop "
        f"{', '.join(f'`{k}=`' for k in keywords)} from the GRPOConfig(...) call"
        for key, (keywords, where) in kept.items()
    )
    only = (
        set(remedy.config_remove) <= set(kept)
        and not (remedy.config_set or remedy.packages or remedy.env_set or remedy.env_unset)
        and remedy.launch is None
    )
    return said if only or not remedy.fix else f"{remedy.fix} ({said})"


def _hydra_edits(plan: Plan, config_set: dict[str, Any], config_remove: list[str]) -> dict[str, str]:
    """Keys the training script takes from the config Hydra composes -> the override that sets
    (``grpo.num_generations=3``) or drops (``~grpo.num_generations``) it on the trainer's line."""
    from envdoctor.plan.build import HYDRA_ORIGIN, file_places
    from envdoctor.remedy.config_edit import yaml_scalar

    places = file_places(plan, nested=False)
    out = {}
    for key in [*config_set, *config_remove]:
        if key in places and plan.config_origin.get(key, "").startswith(HYDRA_ORIGIN):
            dotted = ".".join(places[key])
            out[key] = f"{dotted}={yaml_scalar(config_set[key])}" if key in config_set else f"~{dotted}"
    return out


def _hydra_line(line: str, edits: dict[str, str]) -> str:
    """The trainer's line with Hydra overrides set: one of the same key replaced, else appended."""
    import shlex

    words = shlex.split(line)
    for edit in edits.values():
        dotted = edit.lstrip("~").split("=", 1)[0]
        words = [w for w in words if w.lstrip("+~").split("=", 1)[0] != dotted]
        words.append(edit)
    return shlex.join(words)


def _file_keys(plan: Plan) -> set[str]:
    """The keys the config file sets (as ``fix`` edited it in memory, else on disk)."""
    path = plan.config_path
    if not path or path == "-":
        return set()
    from envdoctor.parsing import parse_mapping

    try:
        text = plan.edited.get(file_key(path)) or read_text(path)
        return set(parse_mapping(text, path, path.endswith(".json")))
    except Exception:  # noqa: BLE001 - an unreadable file was said by check; nothing uncovered here
        return set()


def _flag_edits(plan: Plan, config_set: dict[str, Any], on_line: list[str]) -> dict[str, tuple[str, Any]]:
    """Keys the training script's code takes from its own argparse flags (its default, or the
    flag on the line): set by that flag on the trainer's line, the one place the script reads
    (key -> (the option without its dashes, the value; a store_true / store_false flag: given
    bare, or taken off the line for the value it does not set))."""
    script = plan.script
    if script is None or plan.trainer is None:
        return {}
    out: dict[str, tuple[str, Any]] = {}
    for key, value in config_set.items():
        if key in on_line or key not in script.flag_keys or not from_code(plan.config_origin.get(key, "")):
            continue
        option, switch = script.flag_keys[key]
        if switch is None:
            out[key] = (option.lstrip("-+"), value)
        elif isinstance(value, bool):
            out[key] = (option.lstrip("-+"), _BARE if value == switch else _REMOVE)
    return out


def _copy_facts(facts: Facts) -> Facts:
    out = copy.copy(facts)
    out.packages = dict(facts.packages)
    out.env = dict(facts.env)
    out.extra = dict(facts.extra)
    return out


def _copy_plan(plan: Plan) -> Plan:
    out = copy.copy(plan)
    out.config = dict(plan.config)
    out.config_origin = dict(plan.config_origin)
    out.accelerate = dict(plan.accelerate)  # a fix's edit of the accelerate config is the copy's
    out.edited = dict(plan.edited)
    out.duplicate_keys = list(plan.duplicate_keys)
    out.launches = [replace(lx, env=dict(lx.env)) for lx in plan.launches]
    return out


def _edit_launch_env(launch: Launch, env_set: dict[str, str], env_unset: tuple[str, ...]) -> None:
    for key in env_unset:
        launch.env.pop(key, None)
    for key, value in env_set.items():
        if key in launch.env:
            launch.env[key] = value


def env_prefix_edit(line: str, key: str, value: str | None) -> str:
    """``line`` with the leading assignment ``KEY=…`` set to ``value`` (removed: None); a line
    without one is returned as it is."""
    argv = shlex.split(line)
    out: list[str] = []
    i = 0
    while i < len(argv) and "=" in argv[i] and argv[i].split("=", 1)[0].isidentifier():
        name = argv[i].split("=", 1)[0]
        if name != key:
            out.append(argv[i])
        elif value is not None:
            out.append(f"{key}={value}")
        i += 1
    if len(out) == i and all(a == b for a, b in zip(out, argv, strict=False)):
        return line  # the variable is not among the line's leading assignments
    return shell_join([*out, *argv[i:]])


class _Remove:
    """The value that says: take the argument off the line."""


_REMOVE: Any = _Remove()


class _Bare:
    """The value that says: the option alone, without a value (a store_true flag)."""


_BARE: Any = _Bare()


def script_arg_edit(line: str, key: str, value: Any) -> str:
    """``line`` with the script argument ``--key`` set to ``value`` (or removed: ``_REMOVE``);
    both spellings (``--a_b`` / ``--a-b``) and ``--key=value`` are found."""
    argv = shlex.split(line)
    flags = {f"--{key}", f"--{key.replace('_', '-')}"}
    out: list[str] = []
    i, done = 0, False
    while i < len(argv):
        tok = argv[i]
        name = tok.split("=", 1)[0]
        if name in flags:
            i += 1
            if "=" not in tok:
                while i < len(argv) and not argv[i].startswith("--"):
                    i += 1
            if not isinstance(value, _Remove) and not done:
                out += [name] if isinstance(value, _Bare) else [name, _arg_text(value)]
            done = True
            continue
        out.append(tok)
        i += 1
    if not done and not isinstance(value, _Remove):
        out += [f"--{key}"] if isinstance(value, _Bare) else [f"--{key}", _arg_text(value)]
    return shell_join(out)


def _arg_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merge(first: Remedy, then: Remedy) -> Remedy:
    """One change that does ``first`` and then ``then`` (a later value wins)."""
    config_set = {k: v for k, v in first.config_set.items() if k not in then.config_remove}
    config_set.update(then.config_set)
    remove = [k for k in first.config_remove if k not in then.config_set]
    remove += [k for k in then.config_remove if k not in remove]
    env_set = {k: v for k, v in first.env_set.items() if k not in then.env_unset}
    env_set.update(then.env_set)
    unset = [k for k in first.env_unset if k not in then.env_set]
    unset += [k for k in then.env_unset if k not in unset]
    return Remedy(
        packages={**first.packages, **then.packages},
        config_set=config_set,
        config_remove=tuple(remove),
        env_set=env_set,
        env_unset=tuple(unset),
        launch=then.launch if then.launch is not None else first.launch,
        files=(*first.files, *then.files),
    )
