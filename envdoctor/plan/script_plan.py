"""What the training script a launch line runs adds to the plan (read by ``script_reader``).

A script that takes its options from argparse alone hands GRPOConfig only what its code passes
on: its command line is read through its flags into the ``GRPOConfig(...)`` calls it makes
(``vllm_mode=args.vllm_mode``), and what those calls set literally is config like a config
file's. A script that parses dataclasses (HfArgumentParser / TrlParser) keeps its command line
as config; its own dataclasses' fields are its keys, not GRPOConfig typos.
"""

from __future__ import annotations

import os
from typing import Any

from envdoctor.plan.interface import VALUE_UNKNOWN, Launch, Plan, TrainingScript
from envdoctor.plan.script_file import script_file

#: a key a GRPOConfig call sets to an expression envdoctor does not evaluate
UNKNOWN: Any = object()


def read_training_script(
    plan: Plan, trainer: Launch, script_cfg: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, tuple[Any, str]]]:
    """Read the trainer's script (a ``.py`` file) into ``plan.script`` / ``plan.script_keys``.

    Returns the command-line keys that still reach GRPOConfig directly and the config its code
    sets (key -> (value or ``UNKNOWN``, origin)). A script that is not here or not readable is
    said in ``plan.script.problem``; the command line then stays as it was.
    """
    path = script_file(trainer)
    if not path:
        return script_cfg, {}
    if not os.path.lexists(path):
        plan.script = TrainingScript(
            path, problem=f"{path} is not here (envdoctor reads the script the launch line runs)"
        )
        return script_cfg, {}
    from envdoctor.plan.script_reader import flag_values, read_script

    edited = plan.edited.get(os.path.normpath(path))  # as `envdoctor fix` edited it in memory
    others = {k: v for k, v in plan.edited.items() if k.endswith(".py") and k != os.path.normpath(path)}
    decl = _read(path, read_script) if edited is None and not others else read_script(path, edited, others)
    plan.script = TrainingScript(
        decl.path,
        problem=decl.problem,
        options=decl.closed_options,
        parses=decl.closed_parses,
        unread=decl.unresolved,
        flags_open=decl.dynamic_flags,
        model_by_name=decl.model_by_name,
        model_split=decl.model_split,
        # Unsloth rewrites TRL's trainers and configs when it is imported (unsloth/models/rl.py)
        patched_by="unsloth" if "unsloth" in decl.in_process_imports else None,
        own_trainer=decl.own_trainer,
        own_grpo=decl.own_grpo,
        unread_trainer=decl.unread_trainer,
        trl_added=decl.trl_added,
        trl_calls=tuple(decl.trl_calls),
        trl_overrides=tuple(decl.trl_overrides),
        files=tuple(decl.files),
        ref_ds_prepares=decl.ref_ds_prepares,
        config_filter=decl.config_filter,
        config_filter_keys=decl.config_filter_keys,
        keeps_unknown_keys=decl.keeps_unknown_keys,
        trl_other_trainer=decl.trl_other_trainer,
        builds_grpo=decl.builds_grpo,
        grpo_in_module=decl.grpo_in_module,
        chat_messages=decl.chat_messages,
        config_class=decl.config_class,
        vllm_engine=decl.vllm_engine,
        engine_start=decl.engine_start,
        server_start=decl.server_start,
        stubs=dict(decl.stubs),
        attr_writes=dict(decl.attr_writes),
        client_patched=decl.client_patched,
        builds_trainer=decl.builds_trainer,
        reads_command_line=decl.reads_command_line,
        reads_config=bool(
            decl.parses_dataclasses
            or decl.keeps_unknown_keys
            or decl.self_load
            or decl.hydra_config is not None
            or decl.other_cli
        ),
        packages=decl.packages,
        trl_import=decl.trl_import,
        writes_modules=decl.writes_modules,
        self_load=decl.self_load
        if decl.config_calls and all(c.trl_class and not c.spread for c in decl.config_calls)
        else None,
        config_unread=decl.self_load
        if not decl.config_calls
        and not decl.parses_dataclasses
        and decl.hydra_config is None
        and (decl.builds_grpo or decl.grpo_in_module)
        else None,
    )
    if decl.problem:
        return script_cfg, {}
    if decl.hydra_config is not None:
        from envdoctor.plan.hydra_compose import Unread, compose

        try:
            plan.script.hydra_values, plan.script.hydra_config = compose(
                decl.path, decl.hydra_config[0], decl.hydra_config[1], list(trainer.script_args)
            )
        except Unread as exc:
            plan.script.hydra_unread = str(exc)
    plan.script_keys.update(decl.keys())
    if not decl.parses_dataclasses and not any(c.spread for c in decl.config_calls):
        # no HfArgumentParser / TrlParser reads a config file: the names the script's own code
        # consumes (an Unsloth loader's keyword, a key it reads from the config it loads) are
        # its own, not GRPOConfig typos (CFG004 only: no other rule's key, no suggestion); not
        # where a GRPOConfig(**mapping) call may hand it the file's keys (``GRPOConfig(**cfg)``
        # with ``use_gradient_checkpointing: true``: a TypeError whatever else reads the key)
        plan.script.consumed = dict(decl.consumed)
    plan.script.own_reads = dict(decl.own_reads)
    plan.script.attn_requests = tuple(decl.attn_requests)
    if plan.script.model_split != "spread" and _split_by_flags(decl.split_flags, script_cfg):
        plan.script.model_split = "spread"  # ``--device_map auto`` (or its default) on one process
    given: dict[str, Any] = {}
    if decl.in_process_calls:
        _in_process(plan.script, decl, flag_values(decl, trainer.script_args)[0])
    elif decl.in_process_imports:
        _in_process(plan.script, decl, {})
    if decl.argparse and not decl.parses_dataclasses:
        given, unmatched = flag_values(decl, trainer.script_args)
        script_cfg = {k: v for k, v in script_cfg.items() if k in unmatched or k == "config"}
        if plan.script.options:
            plan.script.refused = {k: o for k, o in unmatched.items() if k in script_cfg}
        # its options that are no config key of TRL's (``--dataset``, ``--use_lora``): a config
        # file that names one names the script's option, not a GRPOConfig typo
        from envdoctor.knowledge import knowledge

        kb = knowledge()
        trl_keys = set(kb.grpo_keys.get("keys") or {}) | set(
            (kb.parser_keys.get("training_arguments") or {}).get("keys") or {}
        )
        for flag in decl.flags.values():
            if flag.dest not in trl_keys:
                said = f"an argparse option of {decl.path} ({flag.options[0]})"
                plan.script_keys.setdefault(flag.dest, said)
    elif decl.argparse:  # flags beside the dataclasses: the script's own too
        for flag in decl.flags.values():
            plan.script_keys.setdefault(flag.dest, f"an argparse option of {decl.path} ({flag.options[0]})")
    elif decl.other_cli and not decl.parses_dataclasses:
        # click, typer, fire… read the command line: its options are the script's, never
        # GRPOConfig's (the GRPOConfig(...) calls below say what reaches TRL)
        for key in script_cfg:
            if key != "config":
                plan.script_keys.setdefault(key, f"an option of {decl.path}, read with {decl.other_cli}")
        script_cfg = {k: v for k, v in script_cfg.items() if k == "config"}
    elif (
        not decl.makes_parser
        and not decl.parses_dataclasses
        and not decl.keeps_unknown_keys
        and any(call.trl_class for call in decl.config_calls)
        and not decl.reads_command_line
    ):
        # it parses no command line at all and builds TRL's config in code: the launch line's
        # flags reach nothing (``python train.py --dataset mbpp`` on a script without argparse)
        for key in script_cfg:
            plan.script_keys.setdefault(key, f"read by nothing: {decl.path} parses no command line")
        script_cfg = {}
    code: dict[str, tuple[Any, str]] = {}
    for call in decl.config_calls:
        for key, place in call.from_file.items():
            plan.script.file_keys.setdefault(key, (place, call.where))
        for section in call.file_spreads:
            plan.script.file_spreads.setdefault(section, call.where)
        for key, place in call.places.items():
            plan.script.config_keywords[key] = (*plan.script.config_keywords.get(key, ()), place)
        if call.trl_class:
            for key in call.passed:
                plan.script.trl_config_keys.setdefault(key, call.where)
            for key, (read, _) in call.key_reads.items():
                plan.script.keyword_reads.setdefault(key, read.lstrip("."))  # .attr: an attribute
        found: dict[str, tuple[Any, str]] = {k: (v, call.where) for k, v in call.values.items()}
        if call.trl_class:
            for key, value in call.values.items():
                plan.script.code_values.setdefault(key, value)
        for key, dest in call.from_flags.items():
            flag = decl.flags[dest]
            plan.script.flag_keys.setdefault(key, (flag.options[0], flag.switch))
            if dest in given:
                found[key] = (given[dest], f"{call.where}, from {flag.options[0]} on the command line")
            elif flag.has_default:
                found[key] = (flag.default, f"{call.where}, the default of {flag.options[0]}")
            else:
                found[key] = (UNKNOWN, f"{call.where}, {VALUE_UNKNOWN}")
        for key in call.unknown:
            found[key] = (UNKNOWN, f"{call.where}, {VALUE_UNKNOWN}")
        for key, (value, origin) in found.items():
            if key in code and code[key][0] is not UNKNOWN and code[key][0] != value:
                code[key] = (UNKNOWN, f"{code[key][1]} and {origin}, {VALUE_UNKNOWN}")
            else:
                code.setdefault(key, (value, origin))
    return script_cfg, code


_READ: dict[tuple[Any, ...], Any] = {}  # the last scripts read, by path, stat and working folder


def _read(path: str, read_script: Any) -> Any:
    """``read_script(path)``, once per file version: ``envdoctor fix`` re-reads the script for
    every launch line it tries."""
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, st.st_ino, os.getcwd())
    except OSError:
        return read_script(path)
    if key not in _READ:
        if len(_READ) >= 8:
            _READ.clear()
        _READ[key] = read_script(path)
    return _READ[key]


def _in_process(script: TrainingScript, decl: Any, given: dict[str, Any]) -> None:
    """Whether the script starts vLLM in its own process by design (Unsloth's
    ``from_pretrained(..., fast_inference=True)``), or imports such a trainer without saying; and
    whether it loads the model with that loader and every call read leaves vLLM off
    (``vllm_in_process_off``: Unsloth's GRPOTrainer then has no ``model.vllm_engine``)."""
    calls = [
        (where, bool(given[dest]) if dest in given else value) for where, value, dest in decl.in_process_calls
    ]
    on = [where for where, value in calls if value]
    if on:
        script.vllm_in_process = on[0]
    elif any(value is None for _, value in calls):
        where = next(w for w, v in calls if v is None)
        script.vllm_in_process_unseen = f"{where} is set to a value envdoctor does not evaluate"
    elif decl.in_process_imports and not calls:
        script.vllm_in_process_unseen = (
            f"{decl.path} imports {', '.join(decl.in_process_imports)} but loads no model with "
            "fast_inference=… that envdoctor reads"
        )
    off = [where for where, value in calls if value is False] + list(decl.in_process_defaults)
    if off and not on and all(value is False for _, value in calls) and not decl.in_process_spreads:
        # every loader call read leaves vLLM off: literally, by a flag's value, or by the
        # loader's default (the keyword left out)
        script.vllm_in_process_off = off[0]


def _split_by_flags(flags: tuple[tuple[str, str | None], ...], given: dict[str, Any]) -> bool:
    """Whether a loader's ``device_map=args.<name>`` reads a map that spreads the model over the
    visible GPUs (``auto``, ``balanced``): the launch line's value of the option, else its
    default (``ScriptDecl.split_flags``)."""
    from envdoctor.plan.script_reader import SPREAD_MAPS

    for name, default in flags:
        value = given.get(name, given.get(name.replace("_", "-"), default))
        if isinstance(value, str) and value.strip("'\"") in SPREAD_MAPS:
            return True
    return False
