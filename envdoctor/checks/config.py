"""Rules on the GRPO config itself, judged against the installed TRL version."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import FileEdit, Remedy
from envdoctor.knowledge import release_said
from envdoctor.knowledge.keys import presence, span
from envdoctor.plan.interface import COMPUTED, ConfigClass, TrainingScript, from_code
from envdoctor.plan.placeholders import placeholder
from envdoctor.plan.values import small_divisors, type_problem
from envdoctor.trl_release import dev_build

#: Keys in a TRL config file that are not GRPOConfig fields but are read by TRL's parser
#: or the example scripts (model and script arguments).
NOT_CONFIG = {
    "env",
    "config",
    "model_name_or_path",
    "dataset_name",
    "dataset_config",
    "dataset_train_split",
    "dataset_test_split",
    "torch_dtype",
    "dtype",
    "attn_implementation",
    "use_peft",
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "lora_target_modules",
    "load_in_4bit",
    "load_in_8bit",
    "trust_remote_code",
    "model_revision",
    "reward_model_name_or_path",
}

#: transformers.TrainingArguments fields that rules read (GRPOConfig inherits them).
TRAINING_ARGUMENT_TYPES = {
    "per_device_train_batch_size": ("int", False),
    "gradient_accumulation_steps": ("int", False),
    "max_steps": ("int", False),
    "seed": ("int", False),
    "num_train_epochs": ("float", False),
    "learning_rate": ("float", False),
    "bf16": ("bool", False),
    "fp16": ("bool", False),
    "gradient_checkpointing": ("bool", False),
    "use_cpu": ("bool", False),
    # float fields: a value below 1 is a ratio of the run's steps (transformers' TrainingArguments
    # since 4.31; TRL's GRPOConfig re-declares logging_steps as float with an int default)
    "logging_steps": ("float", False),
    "save_steps": ("float", False),
    "eval_steps": ("float", True),
}
#: GRPOConfig fields whose default is null, typed by their annotation (``int | None`` …).
OPTIONAL_TYPES = {
    "generation_batch_size": "int",
    "steps_per_generation": "int",
    "max_prompt_length": "int",
    "vllm_device": "str",
    "vllm_server_host": "str",
    "vllm_server_base_url": "str",
    "vllm_gpu_memory_utilization": "float",
}


def field_types(keys: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Key → (int | float | bool | str, may be null), from the defaults TRL declared."""
    out = dict(TRAINING_ARGUMENT_TYPES)
    for key, entry in keys.items():
        defaults = [entry.get("default")] + [d.get("default") for d in entry.get("default_history") or []]
        kinds = {type(d).__name__ for d in defaults if d is not None}
        optional = any(d is None for d in defaults)
        if kinds == {"int", "float"}:
            kinds = {"float"}
        if kinds == {"int"} and out.get(key, ("",))[0] == "float":
            kinds = {"float"}  # a float field whose default is written as an int (logging_steps = 10)
        if len(kinds) == 1 and (kind := kinds.pop()) in ("int", "float", "bool", "str"):
            out[key] = (kind, optional)
        elif not kinds and key in OPTIONAL_TYPES:
            out[key] = (OPTIONAL_TYPES[key], True)
        elif optional and key in out:  # TRL re-declares a TrainingArguments field as optional
            out[key] = (out[key][0], True)
    return out


def _span(entry: dict[str, Any]) -> str:
    since, until = entry.get("since"), entry.get("until")
    if until:
        return f"TRL {since} up to (not including) {until}"
    return f"TRL {since} and newer"


def _deprecated(entry: dict[str, Any], trl: str | None) -> bool:
    """Whether TRL ``trl`` is inside the key's deprecation window (its help said "deprecated"
    from ``first`` up to, not including, ``until``: TRL 0.18 revived
    vllm_gpu_memory_utilization for colocate mode after 0.16–0.17 deprecated it)."""
    dep = entry.get("deprecated_help") or {}
    if not dep.get("first") or versions.below(trl, str(dep["first"])):
        return False
    end = dep.get("until") or entry.get("until")
    return not (end and versions.at_least(trl, str(end)))


def _installed(ctx: Context) -> str:
    """``installed `` when TRL is installed here; nothing when it is assumed (``--assume``, or
    the newest release envdoctor knows when none is installed)."""
    return "" if ctx.trl.assumed or "trl" in (ctx.facts.extra.get("assumed") or []) else "installed "


@rule("CFG001", needs=("plan", "trl-keys"))
def config_key_wrong_version(ctx: Context) -> Iterator[Hit]:
    trl, said = ctx.trl.version, ctx.trl.label()
    keys = ctx.kb.grpo_keys.get("keys") or {}
    if not keys or versions.parse(trl) is None:
        return
    for key, origin in ctx.plan.config_origin.items():
        entry = keys.get(key)
        if entry is None or key in NOT_CONFIG or entry.get("overrides_training_arguments"):
            continue  # TrainingArguments fields are accepted by every GRPOConfig
        if key in ctx.plan.script_keys and not from_code(origin):
            continue  # the script's (or the repository's) own dataclass declares it
        since, until = entry.get("since"), entry.get("until")
        if _deprecated(entry, trl):
            yield _deprecation(ctx, key, origin, entry)
            continue
        too_old = since and versions.below(trl, str(since))
        too_new = until and versions.at_least(trl, str(until))
        present, commit = _at_commit(ctx, key)
        if present is True:
            continue  # the pinned TRL commit declares it (a key of the release it leads to)
        if present is False and not (too_old or too_new):
            too_old = bool(since)
            too_new = not too_old
        if not (too_old or too_new):
            continue
        if commit:
            said = f"{said} (commit {commit[:10]}, which has no `{key}` yet or any more)"
        repl = entry.get("replaced_by")
        value = ctx.config.get(key)
        if too_new:
            msg = (
                f"`{key}` ({origin}) was removed from GRPOConfig in TRL {until}; "
                f"{_installed(ctx)}TRL {said} "
                f"{_parser_does(ctx, origin, key)} (it exists in {_span(entry)})"
            )
            fix = (
                f"replace `{key}` with `{repl}`" if repl else f"remove `{key}`"
            ) + f", or pin 'trl<{until}'"
            remedies = [replace_or_remove(ctx, key, repl, value)]
        else:
            msg = f"`{key}` ({origin}) is not known to TRL {said}: it exists in {_span(entry)}"
            fix = f"pip install 'trl>={since}'"
            if repl:
                fix += f", or use `{repl}` with this TRL"
            remedies = [Remedy(packages={"trl": str(since)}, fix=f"pip install 'trl=={since}'")]
            if repl:
                remedies.insert(0, replace_or_remove(ctx, key, repl, value))
        severity = ctx.on_trl()
        if not commit and _dev_edge(str(trl), str(until if too_new else since)):
            # a build of TRL's main branch on its way to the release that adds (removes) the key:
            # whether the build has it is not known (envdoctor's history holds releases), and a
            # config written for that build most likely sets keys the build takes: advice
            severity = "info"
            msg += (
                f"; TRL {trl} is a development build of the release that "
                f"{'removes' if too_new else 'adds'} it, so it may "
                f"{'still' if too_new else 'already'} {'have' if too_new else 'take'} it"
            )
        script = ctx.plan.script
        other = script.other_config if script is not None and not from_code(origin) else None
        if other is not None:
            # the script builds another class than TRL's GRPOConfig (verifiers' own, Unsloth's,
            # SFTConfig): envdoctor holds no table of its fields, so the key is not judged
            severity = "info"
            msg = f"`{key}` ({origin}): {_other_config_said(other, key, said)}"
            fix, remedies = f"nothing, if {other.name} takes `{key}`", []
        elif script is not None and script.problem and origin == "command line":
            # the launch line runs a script envdoctor could not read (ms-swift's swift/cli/rlhf.py
            # outside the repository): whether it hands its flags to TRL's parser (or to its own,
            # as swift's --vllm_max_model_len) is not known, so TRL's refusal is not proved
            severity = "info"
            msg += (
                f"; but {script.problem}, so whether it hands `--{key}` to TRL's parser is not "
                "known (a wrapper's own parser may take it)"
            )
        elif drops := _script_drops(script, key, said, origin):
            # the script drops this key itself: it keeps only the keys the installed GRPOConfig
            # takes, or its parser hands back the keys no dataclass has instead of refusing them
            # (return_remaining_strings): nothing refuses it, and the setting has no effect
            gone = f"was removed from GRPOConfig in TRL {until}" if too_new else "is not known to"
            msg = (
                f"`{key}` ({origin}) {gone}{'' if too_new else f' TRL {said}'} (it exists in "
                f"{_span(entry)}); {drops}: the setting has no effect"
            )
            severity = "info"
        elif ctx.kb.feature("config_unknown_keys_fail", trl) is False and not from_code(origin):
            # TRL < 0.19's parser drops a key no dataclass has: the run starts, the key is dead
            # (a keyword of a GRPOConfig(...) call is a TypeError in every release); on a
            # development build of the release that adds it, whether it is dead is not known
            severity = "info" if severity == "info" else "warning"
            msg += (
                ": the key is dead, its setting has no effect"
                if too_new
                else f"; TRL {said} {_parser_does(ctx)}: the key is dead, its setting has no effect"
            )
        yield hit(
            msg,
            fix=fix,
            remedy=remedies,
            key=key,
            trl=trl,
            since=since,
            until=until,
            severity=severity,
        )
    yield from _training_arguments_gone(ctx)
    yield from _no_release_keys(ctx)


def code_keys_no_release_takes(ctx: Context) -> dict[str, str]:
    """Keys the training script always passes TRL's own GRPOConfig(...) (a keyword, an entry of
    a mapping it spreads; a config file setting the key too changes nothing) that GRPOConfig has in
    no TRL release and TrainingArguments in no transformers release envdoctor read, while the
    installed TRL and transformers lie inside the releases read: key -> the call. Each raises
    TypeError at the call."""
    script = ctx.plan.script
    if script is None or script.problem or not script.trl_config_keys:
        return {}
    own: set[str] = set()
    if script.patched_by == "unsloth":  # Unsloth's GRPOConfig takes keywords of its own and hands
        # every other one on to TRL's (``**kwargs``)
        own = set((ctx.kb.trl.get("unsloth_config_keywords") or {}).get("keywords") or ())
    installed = ctx.facts.packages.get("trl")
    origin = installed.origin if installed is not None else None
    if origin and not re.search(r"github\.com/huggingface/trl\b", origin):
        return {}  # a fork's GRPOConfig (groundlight/trl's limit_image_per_prompt): fields unknown
    grpo = ctx.kb.grpo_keys.get("keys") or {}
    ta = ctx.kb.parser_keys.get("training_arguments") or {}
    if not grpo or not _inside(ctx.trl.version, ctx.kb.grpo_keys.get("tags_scanned")):
        return {}
    if not _inside(ctx.version("transformers"), ta.get("releases_scanned")):
        return {}
    known = set(grpo) | set(ta.get("keys") or {}) | NOT_CONFIG
    return {
        key: where
        for key, where in script.trl_config_keys.items()
        if key not in known
        and key not in own
        and not (own and key.startswith("unsloth_"))
        and _script_drops(script, key, "", "") is None
    }


def _inside(version: str | None, scanned: Any) -> bool:
    """Whether release ``version`` lies between the first and the last release of ``scanned``
    (a release past the newest one read may have added any field)."""
    tags = sorted(map(str, scanned or ()), key=versions.sort_key)
    have = versions.parse(version)
    if have is None or not tags:
        return False
    public = versions.parse(have.public)
    if public is None:
        return False
    return bool(versions.at_least(public.public, tags[0]) and versions.at_least(tags[-1], public.public))


def _no_release_keys(ctx: Context) -> Iterator[Hit]:
    """CFG001 for a keyword of the script's GRPOConfig(...) call that no release takes: the
    dataclass's __init__ refuses it at the call (TypeError), on every TRL."""
    renames = _renames(ctx)
    found = code_keys_no_release_takes(ctx)
    if not found:
        return
    import difflib  # only for a call with such a keyword

    keys = ctx.kb.grpo_keys.get("keys") or {}
    ta = ctx.kb.parser_keys.get("training_arguments") or {}
    tf = ctx.version("transformers")
    taken = sorted(k for k in keys if ctx.kb.has_config_key(k, ctx.trl.version))
    taken += sorted(k for k in ta.get("keys") or {} if k not in keys and presence(ta, k, tf) != "no")
    for key, where in found.items():
        meant = renames.get(key)
        close = None if meant else difflib.get_close_matches(key, taken, n=1, cutoff=0.85)
        hint = (
            f" (GRPOConfig's name for it is `{meant}`)"
            if meant
            else f" (did you mean `{close[0]}`?)"
            if close
            else ""
        )
        meant = meant or (close[0] if close else None)
        fix = f"remove `{key}` from {where}" + (f"; set `{meant}` for what it meant" if meant else "")
        trainer = (ctx.kb.trainer_params.get("parameters") or {}).get(key)
        if trainer is not None and not meant:  # environment_factory: the trainer's, not the config's
            hint = f" (it is a parameter of GRPOTrainer from TRL {trainer.get('since')}, not of GRPOConfig)"
            fix += "; hand it to GRPOTrainer(...) where it is meant"
        yield hit(
            f"`{key}` ({where}) is a field of GRPOConfig in no TRL release and of TrainingArguments "
            f"in no transformers release envdoctor read{hint}: TRL {ctx.trl.label()}'s GRPOConfig "
            "refuses it at the call (TypeError: unexpected keyword argument), before training",
            fix=fix,
            remedy=[Remedy(config_remove=(key,), fix=f"remove `{key}`")],
            key=key,
            trl=ctx.trl.version,
            where=where,
            severity=ctx.on_trl(),
        )


def _other_config_said(other: ConfigClass, key: str, said: str) -> str:
    """That the script builds ``other`` (not TRL's GRPOConfig), whose fields envdoctor has no
    table for: whether it takes ``key`` is not checked."""
    of = f"TRL {said}'s {other.name}" if other.kind == "trl-other" else other.name
    return (
        f"the training script builds {other.said} for its trainer, whose fields envdoctor has no "
        f"table for, so whether {of} takes `{key}` is not checked"
    )


def _script_drops(script: TrainingScript | None, key: str, said: str, origin: str) -> str | None:
    """How the training script drops a config key its TRL lacks before anything refuses it: a
    filter by GRPOConfig's fields (a GRPOConfig(...) call's keyword too), or a parser that hands
    unknown keys back (a config file's or the command line's keys only); None if it does not."""
    if script is None or script.problem:
        return None
    named = script.config_filter_keys
    if script.config_filter and (named is None or key in named and key not in script.trl_config_keys):
        # a filter of named keys (``if "k" in sig: kw["k"] = …``) drops those it tests, not a key
        # the call is always handed
        return (
            f"the training script keeps only the keys the installed GRPOConfig takes "
            f"({script.config_filter}), so it drops `{key}` on TRL {said}"
        )
    if script.keeps_unknown_keys and not from_code(origin):
        return (
            "the training script's parser hands back the keys no dataclass has instead of refusing "
            f"them ({script.keeps_unknown_keys}), so TRL {said} does not read `{key}`"
        )
    return None


def _dev_edge(trl: str, boundary: str) -> bool:
    """``trl`` is a development build (``0.16.0.dev0``) of the release ``boundary`` (``0.16.0``)."""
    dev, edge = versions.parse(trl), versions.parse(boundary)
    return bool(dev is not None and edge is not None and dev.is_prerelease and dev.release == edge.release)


def _deprecation(ctx: Context, key: str, origin: str, entry: dict[str, Any]) -> Hit:
    """A key inside its deprecation window of the TRL that runs: TRL still accepts it, so this
    is advice (info) naming the release that removes it. A removal is CFG001's error (the TRL that
    runs rejects the key) or DCL001's warning (the declared range admits a release without it):
    docs/report.md#deprecations."""
    trl = ctx.trl.version
    dep = entry.get("deprecated_help") or {}
    repl = entry.get("replaced_by") or dep.get("use_instead")
    removed, revived = entry.get("until"), dep.get("until")
    if removed:
        when = f"TRL {removed} removes it, this TRL still accepts it"
    elif revived:
        when = f"this TRL still accepts it, and TRL {revived} no longer deprecates it"
    else:
        when = "this TRL still accepts it, and no TRL release envdoctor knows removes it"
    return hit(
        f"`{key}` ({origin}) is deprecated in TRL {ctx.trl.label()} (from {dep['first']}): {when}"
        + (f" ({entry['note'].rstrip(';. ')})" if entry.get("note") else ""),
        fix=f"remove `{key}`"
        + (f"; configure `{repl}` instead" if repl else "")
        + (f" (before upgrading to TRL {removed})" if removed else ""),
        remedy=Remedy(config_remove=(key,)),
        severity="info",
        key=key,
        trl=trl,
        removed_in=removed,
    )


def _at_commit(ctx: Context, key: str) -> tuple[bool | None, str]:
    """For TRL pinned by a git commit: whether its GRPOConfig declares ``key`` there (None: not
    known), and the commit."""
    declared = ((ctx.facts.extra.get("declared") or {}).get("stack") or {}).get("trl")
    ref = ""
    if declared is not None and getattr(declared, "how", "") == "git":
        ref = next((d.ref for d in declared.decls if d.ref), "")
    installed = ctx.facts.packages.get("trl")
    origin = installed.origin if installed is not None else None
    if not ref and origin and re.match(r"git\+https://github\.com/huggingface/trl(?:\.git)?@", origin):
        ref = origin.rsplit("@", 1)[1]  # TRL's own repository at a commit, as pip recorded it
    if not ref:
        return None, ""
    from envdoctor.knowledge.trl_commits import has_key

    return has_key(ref, key), ref


#: key prefixes that only one generation mode reads (a replacement of another mode is no fix)
MODE_KEYS = {"server": ("vllm_server_",)}


def replace_or_remove(ctx: Context, key: str, repl: str | None, value: Any) -> Remedy:
    """The remedy for a key of another TRL era: its replacement with the same value where the
    run uses it; removed where the replacement belongs to a mode this run does not use (a stale
    `vllm_device` in a colocate run) or names another thing (a device is not a server host)."""
    mode = ctx.resolved.generation_mode if ctx.plan.use_vllm else None
    of_mode = next((m for m, prefixes in MODE_KEYS.items() if repl and repl.startswith(prefixes)), None)
    if not repl or of_mode is not None:
        why = (
            f" (its successor `{repl}` is a {of_mode}-mode key; this run uses {mode or 'no vLLM'})"
            if repl and of_mode != mode
            else ""
        )
        return Remedy(config_remove=(key,), fix=f"remove `{key}`{why}")
    return Remedy(config_remove=(key,), config_set={repl: value}, fix=f"replace `{key}` with `{repl}`")


def _parser_does(ctx: Context, origin: str = "", key: str = "") -> str:
    """What the installed TRL's parser (or, for a key of a ``GRPOConfig(...)`` call in code,
    the dataclass's ``__init__``) does with a config key no dataclass has; a key of a config
    file the script loads itself reaches TRL only through its GRPOConfig(...) keyword."""
    script = ctx.plan.script
    if from_code(origin):
        return "refuses it at the call (TypeError: unexpected keyword argument)"
    if key and script is not None and script.self_load and key in script.trl_config_keys:
        call = script.trl_config_keys[key]
        return f"refuses it at {call}, which passes it (TypeError: unexpected keyword argument)"
    if origin == "command line":  # transformers' HfArgumentParser.parse_args_into_dataclasses
        return 'refuses it ("Some specified arguments are not used by the HfArgumentParser")'
    if ctx.kb.feature("config_unknown_keys_fail", ctx.trl.version) is False:
        return "drops it silently (its parser ignores unknown config keys before 0.19)"
    return 'refuses it ("Unknown arguments from config file")'


def _training_arguments_gone(ctx: Context) -> Iterator[Hit]:
    """TrainingArguments keys the installed transformers no longer (or not yet) has."""
    table = ctx.kb.parser_keys.get("training_arguments") or {}
    tf = ctx.version("transformers")
    grpo = ctx.kb.grpo_keys.get("keys") or {}
    fields, scripts = table.get("keys") or {}, _script_keys(ctx)
    for key, origin in ctx.plan.config_origin.items():
        if key not in fields or key in grpo or (key in scripts and not from_code(origin)):
            continue  # a keyword of a GRPOConfig(...) call is GRPOConfig's, whoever declares it
        if presence(table, key, tf) != "no":
            continue
        entry = table["keys"][key]
        gone = entry.get("until") and versions.at_least(tf, str(entry["until"]))
        dead = ctx.kb.feature("config_unknown_keys_fail", ctx.trl.version) is False and not from_code(origin)
        yield hit(
            f"`{key}` ({origin}) is not a TrainingArguments field of the installed "
            f"transformers {tf} (it exists in {span(table, key, 'transformers')}): TRL "
            f"{ctx.trl.label()} {_parser_does(ctx, origin)}"
            + (": the key is dead, its setting has no effect" if dead else ""),
            severity="warning" if dead else ctx.on_trl(),
            fix=(
                f"remove `{key}`, or pin 'transformers<{entry['until']}'"
                if gone
                else f"pip install 'transformers>={entry['since']}', or remove `{key}`"
            ),
            remedy=Remedy(config_remove=(key,), fix=f"remove `{key}`"),
            key=key,
            transformers=tf,
        )


def _script_keys(ctx: Context) -> set[str]:
    """Keys of the other dataclasses TRL's GRPO script parses (ModelConfig, ScriptArguments…),
    of any TRL release, those TRL's CLI hands accelerate from its config file (``num_processes``,
    ``accelerate_config``), and those the training script's (or the repository's) own
    dataclasses and GRPOConfig subclasses declare: they are not GRPOConfig's to judge."""
    from envdoctor.plan.launch import TRL_ACCELERATE  # `trl grpo --config`'s keys for accelerate

    table = ctx.kb.parser_keys.get("trl_script_arguments") or {}
    return set(table.get("keys") or {}) | NOT_CONFIG | TRL_ACCELERATE | set(ctx.plan.script_keys)


#: the GRPOConfig keys GRPO's batch check reads (any TRL release)
_BATCH_KEYS = (
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "generation_batch_size",
    "steps_per_generation",
)


def trl_example_trainer(ctx: Context) -> str | None:
    """The trainer outside GRPOTrainer's class tree that TRL's own example script builds, where
    the launch line names one (``examples/scripts/async_grpo.py``) that is not on this machine
    (rules/knowledge/trl_example_scripts.yaml); None otherwise (a script that is here is read)."""
    launch, script = ctx.plan.trainer, ctx.plan.script
    if launch is None or not launch.script or (script is not None and not script.problem):
        return None
    path = launch.script.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    entry = (ctx.kb.trl_example_scripts.get("scripts") or {}).get(name)
    if not entry or not ("/" + path).endswith("/examples/scripts/" + name):
        return None
    if not versions.satisfies(ctx.version("trl"), str(entry.get("trl", ""))):
        return None
    return f"{entry['trainer']} (what TRL's {path} builds; the file is not here)"


@rule("CFG002", needs=("plan", "trl-keys"))
def batch_not_divisible(ctx: Context) -> Iterator[Hit]:
    cfg = ctx.config
    lay = ctx.layout
    script = ctx.plan.script
    if (
        script is not None
        and script.hydra_unread
        and not {"num_generations", "per_device_train_batch_size"} & set(cfg)
    ):
        # the script builds its config from what Hydra composes, and that was not read: the batch
        # is the script's, not TRL's defaults
        yield hit(
            f"GRPO's batch is not judged: {script.path} takes its config from Hydra, and the config "
            f"Hydra composes was not read ({script.hydra_unread})",
            fix="give envdoctor the composed config (python train.py --cfg job > composed.yaml; "
            "envdoctor check --config composed.yaml …)",
            severity="info",
        )
        return
    if script is not None and script.config_unread and not all(k in cfg for k in _BATCH_KEYS[:3]):
        # the script reads the config file itself and builds GRPOConfig in a call envdoctor did
        # not read (set 22's countdown: ``config_cls(**kwargs)`` with num_generations from the
        # file's group_size): a key the file does not name is the script's, not TRL's default
        yield hit(
            f"GRPO's batch is not judged: {script.path} reads its config file itself "
            f"({script.config_unread}) and builds GRPOConfig in a call envdoctor does not read; "
            f"{', '.join(k for k in _BATCH_KEYS[:3] if k not in cfg)} are not in the file, so "
            "TRL's defaults are not known to be the run's",
            fix="nothing, if the script's values divide; to have it judged, build GRPOConfig with "
            "keywords (GRPOConfig(num_generations=…, …))",
            severity="info",
        )
        return
    unknown = [k for k in _BATCH_KEYS if ctx.value_unknown(k)]
    if unknown:
        # the script sets a key of the batch to an expression envdoctor does not evaluate
        # (``generation_batch_size=num_generations * per_device``): TRL's defaults are not it
        shown = ", ".join(f"{k} ({ctx.plan.config_origin[k].split(', ')[0]})" for k in unknown)
        yield hit(
            f"GRPO's batch is not judged: the training script sets {shown} to a value envdoctor "
            "does not evaluate",
            fix="nothing, if the script's values divide; to have it judged, set them as literals",
            severity="info",
            unknown=unknown,
        )
        return
    try:
        gens = int(cfg.get("num_generations", 8))
        per_device = int(cfg.get("per_device_train_batch_size", 8))
        accum = int(cfg.get("gradient_accumulation_steps", 1))
    except (TypeError, ValueError, OverflowError):
        return
    world = max(lay.world_size, 1) if ctx.plan.trainer else max(len(lay.training), 1)
    if gens < 2:
        return
    rule_entry = _batch_entry(ctx, ctx.trl.version)
    span = dev_build(ctx.trl.version)
    ends = [_batch_entry(ctx, v) for v in span] if span else []
    installed = ctx.facts.packages.get("trl")
    origin = installed.origin if installed is not None else None
    if span and ends[0] is not ends[1]:
        # a development build between two releases whose batch rules differ (TRL's main branch,
        # a fork, a local tree: its PEP 610 origin says which): which rule it has is not known
        # (open-r1's trl@main 0.15.0.dev0 of 2025-02-05 trained 7 x 1 vs 8, that of 2025-02-08
        # refused 3 x 1 vs 8), so it is not judged as either release
        said = [
            f"{_batch_said(e, cfg, per_device, world, accum, gens)} under {name}"
            for name, e in zip((f"the releases before {span[1]}", f"TRL {span[1]}'s rule"), ends, strict=True)
        ]
        refused = [
            v
            for v, e in zip(span, ends, strict=True)
            if (got := _global_batch(e, cfg, per_device, world, accum)) and got[0] % gens
        ]
        if refused:
            yield hit(
                f"TRL {ctx.trl.version} is a development build of {span[1]} ("
                + (f"installed from {origin}" if origin else "TRL's main branch or a fork of it")
                + f"), and the batch rule changed on the way to {span[1]}: "
                f"{'; '.join(said)}. "
                "envdoctor does not know which rule this build has (past its knowledge of "
                "releases), so the batch is not judged",
                fix=f"check the batch rule in this build's GRPOTrainer, or install a release "
                f"(pip install 'trl=={span[1]}')",
                severity="info",
                build=ctx.trl.version,
                num_generations=gens,
            )
        return
    if span:
        rule_entry = ends[1]
    if rule_entry is not None and _global_batch(rule_entry, cfg, per_device, world, accum) is None:
        return  # this TRL release checks nothing (0.14)
    total, what = _global_batch(rule_entry, cfg, per_device, world, accum) or (0, "")
    script = ctx.plan.script
    other = script.trl_other_trainer if script is not None and not script.problem else None
    other = other or trl_example_trainer(ctx)
    if other and total % gens:
        # TRL's own trainers outside GRPO's class tree (trl.experimental's AsyncGRPOTrainer
        # derives from TRL's base trainer, its config from the base config): neither runs the check
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations ({gens}); "
            f"the run builds TRL's {other}, which derives from no GRPOTrainer (TRL's symbol "
            "history) and takes no GRPOConfig, so GRPO's batch check does not run",
            fix="nothing for GRPO's check; see the trainer's own documentation for its batch",
            severity="info",
            total=total,
            num_generations=gens,
            trainer=other,
        )
        return
    own = _own_trainer(ctx)
    if own and str((rule_entry or {}).get("where") or "").startswith("GRPOTrainer") and total % gens:
        # TRL 0.15-0.17 check the batch in GRPOTrainer.__init__, which a trainer of the
        # repository's own that derives from another base never runs
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations ({gens}); "
            f"TRL {ctx.trl.label()} checks it in GRPOTrainer.__init__, and the run builds {own}, "
            "which does not run that check: whether its own code needs whole groups is its own",
            fix="nothing for TRL; a multiple of num_generations if the trainer groups completions",
            severity="info",
            total=total,
            num_generations=gens,
            trainer=own,
        )
        return
    unread = script.unread_trainer if script is not None and not script.problem else None
    where = str((rule_entry or {}).get("where") or "")
    built = script.config_class if script is not None and not script.problem else None
    if built is not None and built.kind == "foreign" and where.startswith("GRPOConfig") and total % gens:
        # TRL 0.18+ check the batch in GRPOConfig.__post_init__: a config class envdoctor cannot
        # read (another package's, a Hydra `_target_`) runs it only if it derives from TRL's;
        # a finding that rests on code envdoctor did not read is advice (issue #35)
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations ({gens}); "
            f"TRL {ctx.trl.label()} checks it in GRPOConfig.__post_init__, and the run builds "
            f"{built.said}, which envdoctor could not read: it refuses if it derives from TRL's "
            "GRPOConfig or copies that check, which is not known (advice, not a finding)",
            fix=f"make the global batch a multiple of num_generations ({gens}), unless "
            f"{built.name} neither derives from TRL's GRPOConfig nor needs whole groups",
            severity="info",
            total=total,
            num_generations=gens,
            config_class=built.name,
        )
        return
    if unread and where.startswith("GRPOTrainer") and total % gens:
        # the check runs in TRL 0.15-0.17's GRPOTrainer.__init__; a trainer class envdoctor could
        # not read may derive from it (and refuse) or not (a copy of the GRPO loop, as
        # open-r1-multimodal's Qwen2VLGRPOTrainer): not known, so advice (issue #35: a finding
        # that rests on a part of the script envdoctor could not read stays at info)
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations ({gens}); "
            f"TRL {ctx.trl.label()} checks it in GRPOTrainer.__init__, and the run builds {unread}, "
            "which envdoctor could not read: it refuses at init if it derives from TRL's "
            "GRPOTrainer or copies that check, which is not known (R1-V-style trainers copy "
            "the GRPO loop onto transformers' Trainer and group completions their own way)",
            fix=f"make the global batch a multiple of num_generations ({gens}), or point envdoctor "
            "at the trainer's source (run it from the repository's root)",
            severity="info",
            total=total,
            num_generations=gens,
            trainer=unread,
        )
        return
    unsloth = script is not None and script.patched_by == "unsloth"
    if (
        total % gens
        and unsloth
        and cfg.get("generation_batch_size") is None
        and cfg.get("steps_per_generation") is None
    ):
        # Unsloth's GRPOConfig sets per_device_train_batch_size to num_generations when the batch
        # is not a multiple of it and neither generation_batch_size nor steps_per_generation is
        # set (unsloth/models/rl.py, "We will change the batch size of …"): TRL never sees this
        # batch, and the run trains with another one
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations ({gens}); "
            f"{script.path if script else 'the script'} imports Unsloth, whose GRPOConfig changes "
            f"per_device_train_batch_size to {gens} instead, so TRL does not refuse it: the run "
            f"trains {gens} completions per device, not {per_device}",
            fix=f"set per_device_train_batch_size: {gens} to train with the batch Unsloth uses (its "
            "memory is what the run needs)",
            severity="info",
            total=total,
            num_generations=gens,
            rewritten_by="unsloth",
        )
        return
    unseen = _unsloth_unseen(ctx) if total % gens else None
    if total % gens:
        good = small_divisors(total)  # bounded: total may have 15 digits
        fix = f"set num_generations to a divisor of {total}: {', '.join(map(str, good[:6]))}"
        fits = [d for d in good if 2 <= d <= gens][-1:] + [d for d in good if d > gens][:1]
        remedies = [_generations(d) for d in fits]
        if what.startswith("per_device_train_batch_size"):  # not generation_batch_size's
            need, bigger = _per_device_multiple(per_device, total // per_device, gens)
            fix += f"; or make per_device_train_batch_size a multiple of {need}"
            remedies.append(
                Remedy(
                    config_set={"per_device_train_batch_size": bigger},
                    fix=f"set per_device_train_batch_size: {bigger}",
                )
            )
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations "
            f"({gens}): TRL refuses at init"
            + (
                f" (TRL {ctx.trl.label()}: another release's batch rule may differ)"
                if ctx.trl.assumed
                else ""
            )
            + (
                f"; unless the training code imports Unsloth, whose GRPOConfig changes "
                f"per_device_train_batch_size to {gens} instead ({unseen})"
                if unseen
                else ""
            ),
            fix=fix,
            # whether Unsloth rewrites the batch rests on a script envdoctor did not read: advice
            # (issue #35; a published Unsloth notebook trained 1 x 1 vs 2 so)
            severity="info" if unseen else ctx.on_trl(),
            remedy=remedies,
            total=total,
            num_generations=gens,
        )
    if not unsloth:  # Unsloth's GRPOConfig rewrites batches its own way
        yield from _eval_batch(ctx, rule_entry, cfg, world)


def _eval_rule(entry: dict[str, Any] | None, version: str | None) -> tuple[bool, str] | None:
    """Whether TRL ``version`` refuses an eval batch num_generations does not divide (``entry``'s
    ``eval_rule``, rules/knowledge/trl.yaml): (whether num_generations_eval counts first, the
    error's where); None where the release checks no eval batch (0.14, 0.20-0.21)."""
    rule = (entry or {}).get("eval_rule")
    if isinstance(rule, list):
        sub = next((r for r in rule if versions.satisfies(version, str(r.get("trl", ""))) is True), None)
        text = str((sub or {}).get("rule") or "")
        if not text or text.startswith("no eval check"):
            return None
        return "num_generations_eval" in text, str((entry or {}).get("where") or "")
    if not isinstance(rule, str) or "eval_strategy" not in rule:
        return None
    return False, str((entry or {}).get("where") or "")


def _eval_batch(ctx: Context, entry: dict[str, Any] | None, cfg: dict[str, Any], world: int) -> Iterator[Hit]:
    """CFG002 for the eval batch: with evaluation on (eval_strategy not "no"), TRL refuses a global
    eval batch (per_device_eval_batch_size x processes) that the generations per prompt do not
    divide, as it does the train batch (GRPOTrainer.__init__ in 0.15-0.17, GRPOConfig from 0.18;
    not in 0.20-0.21; num_generations_eval first from 0.27)."""
    strategy = cfg.get("eval_strategy", cfg.get("evaluation_strategy"))
    if strategy is None or str(strategy).lower() == "no":
        return
    rule = _eval_rule(entry, ctx.trl.version)
    if rule is None:
        return
    first_eval, where = rule
    try:
        per = int(cfg.get("per_device_eval_batch_size", 8))
        gens = int((cfg.get("num_generations_eval") if first_eval else None) or cfg.get("num_generations", 8))
    except (TypeError, ValueError, OverflowError):
        return
    total = per * world
    if gens < 2 or total % gens == 0:
        return
    need, bigger = _per_device_multiple(per, world, gens)
    key = "num_generations_eval" if first_eval and cfg.get("num_generations_eval") else "num_generations"
    yield hit(
        f"the global eval batch {total} = per_device_eval_batch_size ({per}) × processes ({world}) is "
        f"not divisible by {key} ({gens}) with eval_strategy {strategy!r}: TRL {ctx.trl.label()} "
        f"refuses it at init ({where.split(' (')[0] or 'GRPOConfig'}), as it does the train batch",
        fix=f"set per_device_eval_batch_size: {bigger} (a multiple of {need}), or eval_strategy: no",
        severity=ctx.on_trl(),
        remedy=[
            Remedy(
                config_set={"per_device_eval_batch_size": bigger},
                fix=f"set per_device_eval_batch_size: {bigger}",
            )
        ],
        total=total,
        num_generations=gens,
        eval=True,
    )


def _batch_entry(ctx: Context, version: str | None) -> dict[str, Any] | None:
    """The ``grpo_batch_rule`` entry of TRL ``version`` (rules/knowledge/trl.yaml), or None."""
    rules = ctx.kb.trl.get("grpo_batch_rule", [])
    return next((r for r in rules if versions.satisfies(version, str(r.get("trl", "")))), None)


def _global_batch(
    entry: dict[str, Any] | None, cfg: dict[str, Any], per_device: int, world: int, accum: int
) -> tuple[int, str] | None:
    """The batch ``entry``'s rule divides by num_generations and how it is made up; None when that
    release checks nothing (0.14). No entry: the newest rule (steps_per_generation)."""
    formula = str((entry or {}).get("global_batch") or "")
    if entry is not None and not formula:
        return None
    gen_batch = cfg.get("generation_batch_size")
    steps = cfg.get("steps_per_generation")
    if formula.startswith("per_device_train_batch_size * num_processes"):
        total = per_device * world
        what = f"per_device_train_batch_size ({per_device}) × processes ({world})"
        if "gradient_accumulation_steps" in formula:
            total *= accum
            what += f" × gradient_accumulation_steps ({accum})"
        return total, what
    if isinstance(gen_batch, int):
        return gen_batch, f"generation_batch_size ({gen_batch})"
    steps = int(steps) if isinstance(steps, int) else accum
    return per_device * world * steps, (
        f"per_device_train_batch_size ({per_device}) × processes ({world}) × steps_per_generation ({steps})"
    )


def _batch_said(
    entry: dict[str, Any] | None, cfg: dict[str, Any], per_device: int, world: int, accum: int, gens: int
) -> str:
    got = _global_batch(entry, cfg, per_device, world, accum)
    if got is None:
        return "no divisibility check"
    total, what = got
    return f"{total} = {what}, {'not ' if total % gens else ''}divisible by {gens}"


def _own_trainer(ctx: Context) -> str | None:
    """The repository's own trainer class the run builds instead of TRL's GRPOTrainer (read from
    the training script; for a config no launch line runs, from the scripts the repository's
    launch lines run, when all of them build such a trainer: ``own_trainer`` in the facts)."""
    script = ctx.plan.script
    if script is not None and not script.problem:
        return script.own_trainer
    said = ctx.facts.extra.get("own_trainer")
    return said if isinstance(said, str) else None


def _unsloth_unseen(ctx: Context) -> str | None:
    """Unsloth is in the stack (installed or declared) and the training script was not read, so
    whether Unsloth's GRPOConfig rewrites the batch was not seen: why; None otherwise."""
    script = ctx.plan.script
    if script is not None and not script.problem:
        return None
    declared = (ctx.facts.extra.get("declared") or {}).get("stack") or {}
    have = ctx.facts.version("unsloth") or ("declared" if "unsloth" in declared else None)
    if not have:
        return None
    why = script.problem if script is not None else "no training script was named on a launch line"
    return f"unsloth {have} is in the stack and the training script was not read: {why}"


def _server_mode(ctx: Context) -> bool:
    """Whether the trainer generates through a vLLM server (the server settings are read)."""
    from envdoctor.plan.layout import vllm_mode

    return bool(ctx.plan.use_vllm) and vllm_mode(ctx.plan, ctx.facts, ctx.kb) == "server"


def _generations(n: int) -> Remedy:
    return Remedy(config_set={"num_generations": n}, fix=f"set num_generations: {n}")


def _per_device_multiple(per: int, others: int, gens: int) -> tuple[int, int]:
    """The per-device batch the global batch ``per × others`` needs for ``gens`` to divide it:
    (the multiple it must be, the nearest such value at or above ``per``)."""
    need = gens // math.gcd(others, gens)
    return need, -(-per // need) * need


@rule("CFG003", needs=("plan", "trl-keys"))
def num_generations_too_small(ctx: Context) -> Iterator[Hit]:
    gens = ctx.config.get("num_generations")
    if isinstance(gens, int) and not isinstance(gens, bool) and gens < 2:
        yield hit(
            f"num_generations is {gens}: GRPO normalizes rewards within each group, "
            "so it needs at least 2 completions per prompt",
            fix="set num_generations: 2 or more (TRL's default is 8)",
            remedy=[
                Remedy(config_set={"num_generations": n}, fix=f"set num_generations: {n}") for n in (8, 4, 2)
            ],
            num_generations=gens,
        )


MAX_TYPO_KEYS = 200  # a config with thousands of unknown keys is not a typo


@rule("CFG004", needs=("plan", "trl-keys"))
def config_key_typo(ctx: Context) -> Iterator[Hit]:
    keys = ctx.kb.grpo_keys.get("keys") or {}
    if not keys:
        return
    ta = ctx.kb.parser_keys.get("training_arguments") or {}
    ta_keys = set(ta.get("keys") or {})
    scripts = _script_keys(ctx)
    known = set(keys) | ta_keys | scripts
    script = ctx.plan.script
    refused = {
        k: typed
        for k, typed in (script.refused if script else {}).items()
        if ctx.plan.config_origin.get(k) == "command line"
    }
    refuses = code_keys_no_release_takes(ctx)  # CFG001's: TRL's GRPOConfig(...) call refuses them
    # the script's own names (``get_peft_model(use_gradient_checkpointing=…)``), unless a section
    # the script spreads into GRPOConfig holds the key (``**cfg["grpo"]``): GRPOConfig gets it too
    consumed = {
        k
        for k in (script.consumed if script is not None else ())
        if ", spread into " not in ctx.plan.config_origin.get(k, "")
    }
    unknown = [
        k
        for k in ctx.plan.config_origin
        if k not in known and k not in refused and k not in refuses and k not in consumed
    ]
    yield from _not_parsed(ctx, [k for k in ctx.plan.config_origin if k in known], ta_keys)
    if not (unknown or refused):
        return
    import difflib  # only for a config with keys to match

    for typed in refused.values():  # options the script's argparse does not declare
        assert script is not None
        yield _not_an_option(ctx, typed, script.path, script.options, difflib)

    trl, tf = ctx.trl.version, ctx.version("transformers")
    current = {
        k
        for k, e in keys.items()  # prefer keys this TRL accepts
        if not (e.get("until") and versions.at_least(trl, str(e["until"])))
        and not (e.get("since") and versions.below(trl, str(e["since"])))
    }
    current |= {k for k in ta_keys if presence(ta, k, tf) != "no"} | scripts
    preferred, everything = sorted(current), sorted(known)
    unchecked = _keys_unchecked(
        ctx, table_keys=set(ctx.kb.parser_keys.get("trl_script_arguments", {}).get("keys") or {})
    )
    own: list[str] = []  # no close match: the script's own dataclass keys, most likely
    other = script.other_config if script is not None else None
    for key in unknown[:MAX_TYPO_KEYS]:
        origin = ctx.plan.config_origin[key]
        close = difflib.get_close_matches(key, preferred, n=1, cutoff=0.85) or difflib.get_close_matches(
            key, everything, n=1, cutoff=0.85
        )
        if not close:
            own.append(key)
            continue
        guess = close[0]
        if other is not None and other.kind == "trl-other" and guess in ta_keys and not from_code(origin):
            yield hit(  # every trainer config of TRL's derives from TrainingArguments
                f"`{key}` ({origin}) is not a field of TrainingArguments, the base of {other.said}, "
                f"in any release envdoctor knows; did you mean `{guess}`?",
                fix=f"rename `{key}` to `{guess}`",
                remedy=Remedy(config_remove=(key,), config_set={guess: ctx.config.get(key)}),
                key=key,
                suggestion=guess,
                config_class=other.name,
            )
            continue
        if other is not None and not from_code(origin):  # keys of a class envdoctor has no table of
            yield hit(
                f"`{key}` ({origin}): not a key of TRL's GRPOConfig or TrainingArguments; did you "
                f"mean `{guess}`? But {_other_config_said(other, key, ctx.trl.label())}",
                fix=f"rename `{key}` to `{guess}`, unless {other.name} takes `{key}`",
                severity="info",
                key=key,
                suggestion=guess,
                config_class=other.name,
            )
            continue
        why = unchecked or (_foreign_program(ctx) or _options_unseen(ctx) if origin == "command line" else "")
        if why:  # the script that may declare `key` was not read: a typo is not proved
            yield hit(
                f"`{key}` ({origin}): not checked, as no field of GRPOConfig, TrainingArguments or "
                f"TRL's script arguments; did you mean `{guess}`? Fine when your script's "
                f"dataclasses declare it{why}",
                fix=f"rename `{key}` to `{guess}`, unless your training script declares `{key}`",
                severity="info",
                key=key,
                suggestion=guess,
            )
            continue
        if _other_shape(ctx, ctx.config.get(key), guess):
            own.append(key)  # a list is no misspelling of a string field (dataset_configs: [all])
            continue
        msg = (
            f"`{key}` ({origin}) is not a field of GRPOConfig, TrainingArguments or TRL's "
            f"script arguments in any release envdoctor knows; did you mean `{guess}`?"
        )
        fix = f"rename `{key}` to `{guess}`"
        value = ctx.config.get(key)
        remedy = Remedy(config_remove=(key,), config_set={guess: value})
        entry = keys.get(guess)
        if guess not in current and entry is not None:  # a key of another TRL era
            repl = entry.get("replaced_by")
            which = "the installed " if _installed(ctx) else ""
            msg += f" (a key of {_span(entry)}, not of {which}TRL {ctx.trl.label()})"
            fix = (
                f"{release_said('trl', trl, ctx.kb)} replaced `{guess}` with `{repl}`: "
                f"set that instead of `{key}`"
                if repl
                else f"remove `{key}`; `{guess}` needs {_span(entry)}"
            )
            remedy = replace_or_remove(ctx, key, repl, value)
        elif guess not in current:  # a TrainingArguments field of another transformers
            msg += (
                f" (a TrainingArguments field of {span(ta, guess, 'transformers')}, not of "
                f"the installed transformers {tf})"
            )
            fix = f"remove `{key}`; `{guess}` needs {span(ta, guess, 'transformers')}"
            remedy = Remedy(config_remove=(key,))
        yield hit(msg, fix=fix, remedy=remedy, key=key, suggestion=guess)
    if own:
        shown = ", ".join(f"`{k}`" for k in own[:8]) + (f" and {len(own) - 8} more" if len(own) > 8 else "")
        if other is not None and not any(from_code(ctx.plan.config_origin[k]) for k in own):
            yield hit(
                f"{shown}: not keys of TRL's GRPOConfig or TrainingArguments; the training script "
                f"builds {other.said} for its trainer, whose fields envdoctor has no table for",
                fix=f"nothing, if {other.name} takes them",
                severity="info",
                keys=own,
                config_class=other.name,
            )
            return
        yield hit(
            f"{shown}: not keys of GRPOConfig, TrainingArguments or TRL's own script "
            "arguments; fine when your script's dataclasses declare them (as open-r1's "
            "declare system_prompt), else TRL's parser "
            f"{_parser_does(ctx)}" + _script_said(ctx),
            fix="nothing, if your training script parses them",
            severity="info",
            keys=own,
        )


def _other_shape(ctx: Context, value: Any, guess: str) -> bool:
    """Whether ``value`` is a list or mapping while ``guess`` (the known key one edit away) takes
    a single value: the typed key is another framework's field, not a misspelling of ``guess``
    (open-r1's recipes carry the alignment-handbook's ``dataset_configs: [all]``; renaming it to
    TRL's ``dataset_config``, a string, would hand load_dataset a list). Kinds: GRPOConfig's from
    its defaults, TrainingArguments', and the annotations of TRL's script dataclasses
    (rules/knowledge/script_argument_types.yaml)."""
    if not isinstance(value, (list, tuple, dict)):
        return False
    kinds = {k: kind for k, (kind, _) in field_types(ctx.kb.grpo_keys.get("keys") or {}).items()}
    kinds.update((ctx.kb.script_argument_types.get("kinds") or {}).items())
    want = kinds.get(guess)
    if want in ("str", "int", "float", "bool"):
        return True
    return want == "list" and isinstance(value, dict)


def _not_parsed(ctx: Context, keys: list[str], ta_keys: set[str]) -> Iterator[Hit]:
    """Keys of TRL's dataclasses that the training script does not hand its parser (it parses
    every class envdoctor read, and only those): the parser refuses them (or, TRL < 0.19 from a
    config file, drops them)."""
    script = ctx.plan.script
    if script is None or script.parses is None:
        return
    from envdoctor.plan.launch import TRL_ACCELERATE
    from envdoctor.plan.script_reader import CONFIG_CLASS, trl_class_fields

    table = ctx.kb.parser_keys.get("trl_script_arguments") or {}
    owner: dict[str, str] = {}  # key -> the TRL class that has it
    for name in ("ModelConfig", "GRPOScriptArguments", "ScriptArguments", "DatasetMixtureConfig"):
        owner.update(dict.fromkeys(trl_class_fields(name, table, ctx.kb.grpo_keys) or (), name))
    owner.update(dict.fromkeys(ta_keys, "TrainingArguments (GRPOConfig's base)"))
    owner.update(dict.fromkeys(ctx.kb.grpo_keys.get("keys") or (), CONFIG_CLASS))
    owner.update(dict.fromkeys(TRL_ACCELERATE, "CLI (`trl grpo --config` hands it to accelerate)"))
    allowed = set(ctx.plan.script_keys) | {"config", "env"}  # TrlParser's own
    for name in script.parses:
        fields = trl_class_fields(name, table, ctx.kb.grpo_keys)
        if fields is None:
            return  # a TRL class envdoctor has no table of: its fields are unknown
        allowed |= set(fields) | (ta_keys if name == CONFIG_CLASS else set())
    parsed = ", ".join(script.parses) or "none of TRL's"
    for key in keys:
        origin = ctx.plan.config_origin[key]
        if (
            key in allowed
            or key not in owner
            or not (origin == "command line" or origin.startswith("config file"))
        ):
            continue
        does = "refuses it" if origin == "command line" else _parser_does(ctx)
        inert = (
            key in TRL_ACCELERATE
            and origin != "command line"
            and ctx.kb.feature("config_unknown_keys_fail", ctx.trl.version) is False
        )
        yield hit(
            f"`{key}` ({origin}) is a field of TRL's {owner[key]}, which {script.path} does not hand "
            f"its HfArgumentParser / TrlParser (TRL's classes it parses: {parsed}): the parser {does}"
            + (
                f"; it has no effect: this run's processes and accelerate settings come from its "
                f"{ctx.layout.launcher} launch line"
                if inert
                else ""
            ),
            fix=f"remove `{key}`, or declare it in a dataclass {script.path} parses",
            severity="info" if inert else None,
            key=key,
            parses=list(script.parses),
        )


def _options_unseen(ctx: Context) -> str:
    """Why a command-line key may be the script's own option although envdoctor saw no flag of it
    declared: the script was not read, or its parser takes options envdoctor does not see ("" when
    every option was seen)."""
    script = ctx.plan.script
    if script is not None and script.problem:
        return _script_said(ctx)  # absent, or not Python: the options it declares are not known
    if script is None or not script.flags_open:
        return ""
    return (
        f" ({script.path} adds options envdoctor does not read: its parser is handed to code of "
        "another module, or an option's name is computed)"
    )


def _foreign_program(ctx: Context) -> str:
    """Why the launch line's flags are a program's own ("" when they may be TRL's): the line runs a
    program envdoctor does not know (a project's console script, ``uv run train``), so its parser,
    not TRL's, reads them."""
    trainer = ctx.plan.trainer
    if trainer is None or trainer.launcher != "unknown" or not trainer.program:
        return ""
    return (
        f" (the launch line runs `{trainer.program[0]}`, a program envdoctor does not know: "
        "its flags are its own)"
    )


def _keys_unchecked(ctx: Context, table_keys: set[str]) -> str:
    """Why the config's unknown keys cannot be judged typos ("" when they can): the config is
    clearly a script's (it sets TRL's script arguments, such as ``model_name_or_path``, which
    only a script's parser reads; or the script parses classes envdoctor could not read) and the
    script whose dataclasses may declare them was not read (absent, not Python), or no launch
    line names it and the repository was not read either (the hook reads it)."""
    script = ctx.plan.script
    if script is not None and script.unread:
        return _script_said(ctx)
    if script is not None and not script.problem:
        return ""
    if script is None and (ctx.plan.trainer is not None or ctx.plan.repository_read):
        return ""  # `trl grpo` and the like: TRL's own parser, whose keys envdoctor knows
    grpo = ctx.kb.grpo_keys.get("keys") or {}
    args = sorted(k for k in ctx.plan.config_origin if k in table_keys and k not in grpo)
    if not args:
        return ""
    said = _script_said(ctx) if script is not None else " (no launch line names the training script"
    return (
        said[:-1] if said.endswith(")") else said
    ) + f"; the config sets its script arguments (`{args[0]}`))"


def _script_said(ctx: Context) -> str:
    """What envdoctor knows of the training script, for keys it cannot place."""
    script = ctx.plan.script
    if script is None:
        return ""
    if script.problem:
        return f" (the training script was not read: {script.problem})"
    if script.unread:
        shown = ", ".join(script.unread[:4])
        return f" ({script.path} parses classes envdoctor could not read: {shown})"
    return f" ({script.path} and the repository modules it imports do not declare them)"


def _not_an_option(ctx: Context, typed: str, path: str, options: tuple[str, ...], difflib: Any) -> Hit:
    """A command-line option that the script's argparse (which alone reads its command line)
    does not declare: argparse stops the script before training."""
    key = typed.lstrip("-").replace("-", "_")
    spelled = {o.lstrip("-").replace("-", "_"): o for o in options}
    close = difflib.get_close_matches(key, list(spelled), n=1, cutoff=0.8)
    msg = (
        f"`{typed}` (command line) is not an option of {path}: its argparse declares no such "
        'option and stops with "unrecognized arguments" before training'
    )
    if not close:
        return hit(msg, fix=f"remove `{typed}`, or declare it in {path}", key=key, suggestion=None)
    right = spelled[close[0]]
    return hit(
        msg + f"; did you mean `{right}`? (argparse matches options as written)",
        fix=f"write `{right}`",
        remedy=_renamed_option(ctx, typed, right),
        key=key,
        suggestion=right,
    )


def _renamed_option(ctx: Context, typed: str, right: str) -> Remedy | None:
    """The run's launch lines with the trainer's ``typed`` option written ``right``."""
    import re

    trainer = ctx.plan.trainer
    if trainer is None:
        return None
    line, n = re.subn(rf"(?<!\S){re.escape(typed)}(?=[=\s]|$)", right, trainer.raw)
    if n != 1:
        return None  # not once as a word of the line: leave the launch as it is
    others = [lx.raw for lx in ctx.plan.launches if lx is not trainer]
    return Remedy(launch=(*others, line))


def _default_said(ctx: Context, key: str) -> str:
    """`` (TRL x's default v applies)`` where the installed TRL's default of ``key`` is known."""
    from envdoctor.checks import matching

    default = matching.config_default(ctx, key)
    return "" if default is matching._MISSING else f" (TRL {ctx.trl.label()}'s default {default!r} applies)"


#: the words transformers' ``string_to_bool`` takes for a boolean flag's value
_CLI_BOOLS = frozenset({"1", "0", "yes", "no", "y", "n", "t", "f", "true", "false"})


def _read_under_strategy(ctx: Context, key: str) -> bool:
    """Whether transformers reads ``key`` under the config's strategy: False for a field it reads
    only under a strategy the config does not choose (trl.yaml ``read_under_strategy``:
    ``save_steps`` only when ``save_strategy`` is steps, its default)."""
    entry = (ctx.kb.trl.get("read_under_strategy") or {}).get(key)
    if not isinstance(entry, dict):
        return True
    chosen = ctx.value(str(entry.get("strategy")), entry.get("default"))
    if chosen is COMPUTED:
        return True  # the script computes the strategy: not known to leave the key unread
    return str(chosen).lower() == str(entry.get("value")).lower()


@rule("CFG005", needs=("plan", "trl-keys"))
def config_value_type(ctx: Context) -> Iterator[Hit]:
    types = field_types(ctx.kb.grpo_keys.get("keys") or {})
    for key, origin in ctx.plan.config_origin.items():
        if key not in types or key not in ctx.config:
            continue
        kind, optional = types[key]
        value = ctx.config[key]
        if value is None and from_code(origin):
            continue  # a None in code skips TRL's parser (often "use the default", e.g. top_p)
        if "command line" in origin and isinstance(value, str) and placeholder(value):
            continue  # a launch line's $PORT as a script holds it: the shell gives its value
        problem = type_problem(value, kind, optional)
        if problem and kind == "bool" and "command line" in origin and str(value).lower() in _CLI_BOOLS:
            continue  # HfArgumentParser reads a flag's 1 / 0 / yes / no as a boolean (string_to_bool)
        if problem and value is None and key.startswith("vllm_server_") and not _server_mode(ctx):
            continue  # a server setting left empty is never read unless the trainer uses a server
        if problem and value is None and not _read_under_strategy(ctx, key):
            continue  # a null transformers reads only under another strategy (save_steps under epoch)
        if problem:
            if isinstance(value, str):
                said = "Truthy value expected" if kind == "bool" else f"invalid {kind} value: {value!r}"
                effect = f'TRL\'s parser stops with "{said}" before training'
            else:
                effect = "TRL's parser passes it through and the trainer fails on it later"
            wanted = {
                "int": "an integer, e.g. 8",
                "float": "a number, e.g. 0.5",
                "bool": "true or false",
                "str": "a string",
            }[kind]
            said = _default_said(ctx, key)
            yield hit(
                f"`{key}: {value!r}` ({origin}) is {problem}: {effect}",
                fix=f"give `{key}` {wanted}",
                remedy=Remedy(config_remove=(key,), fix=f"remove `{key}`{said}, or give it {wanted}")
                if said
                else None,
                key=key,
                value=repr(value),
                expected=kind,
            )


@rule("CFG006")
def config_unreadable(ctx: Context) -> Iterator[Hit]:
    """A config file of the repository that is not valid YAML / JSON (the hook found it): the
    run that is given it stops before training; an error where a launch line names it."""
    import re

    for seen in ctx.facts.extra.get("unreadable_configs") or []:
        path, problem, runs = seen["path"], seen["problem"], seen.get("launches") or []
        at = re.search(r"line (\d+)", problem)
        if runs:
            shown = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
            said = f"the repository launches it ({shown}): that run stops"
        else:
            said = "no launch line of the repository names it; a run given it stops"
        yield hit(
            f"{path} cannot be read: {problem}; {said} before training (TRL's parser and "
            "accelerate read it with yaml.safe_load)",
            fix=f"correct {path}" + (f" at line {at.group(1)}" if at else "") + ", then run the hook again",
            severity="error" if runs else "warning",
            file=path,
            line=int(at.group(1)) if at else 1,
            launches=list(runs),
        )


@rule("CFG008", needs=("plan",))
def trl_call_keyword(ctx: Context) -> Iterator[Hit]:
    """A keyword the training script passes to TRL's trainer (its constructor, or a method of the
    object it built) that the TRL release that runs does not take: TypeError at that call. From
    the call table derived from the symbol history of TRL's releases
    (rules/knowledge/symbols/trl.GRPOTrainer.json), read only when the script makes such a call."""
    script = ctx.plan.script
    version = ctx.trl.version
    if script is None or script.problem or not script.trl_calls or not version:
        return
    from envdoctor.knowledge.symbol_history import calls

    for call in script.trl_calls:
        table = calls("trl", call.cls)  # a few KB beside the history: never the whole history
        releases = [str(r) for r in (table or {}).get("releases") or []]
        if table is None:
            continue
        if version not in releases:
            yield from _dev_build_keywords(ctx, call, table, releases)
            continue  # a release past the history: not said
        bit = 1 << releases.index(version)
        row = table["methods"].get(call.method) or {}
        for key in call.keywords:
            scope, have = int(row.get("@", 0)), int(row.get(key, 0)) | int(row.get("**", 0))
            if not scope & bit or have & bit:
                continue  # the method is not the class's own there (a base's), or it takes it
            if _unsloth_takes(script, call, key, row, bit):
                continue
            takes = [r for i, r in enumerate(releases) if have >> i & 1]
            taken = [k for k, b in row.items() if k not in ("@", "**") and int(b) & bit]
            meant = _meant(key, taken, call.keywords, _renames(ctx))
            cands = _rename_keyword(call, key, meant) if meant else _drop_keyword(call, key)
            shown = f"{call.cls}({key}=…)" if call.method == "__init__" else f"{call.method}({key}=…)"
            when = "at init, before training" if call.method == "__init__" else "when the call runs"
            if takes:
                # the nearest release that takes it: the smallest move from the TRL that runs
                here = releases.index(version)
                later = [r for r in takes if releases.index(r) > here]
                nearest = later[0] if later else takes[-1]
                fix = (
                    f"remove `{key}=` from the call, or install a TRL that takes it "
                    f"({_spans(takes, releases)}), the nearest being pip install 'trl=={nearest}' "
                    "(then run envdoctor check again: its vLLM and transformers ranges differ)"
                )
                cands.append(Remedy(packages={"trl": nearest}, fix=f"pip install 'trl=={nearest}'"))
            else:
                fix = (
                    f"remove `{key}=` from the call: no TRL release takes it (a fork's or another "
                    "release line's keyword)"
                )
            if meant:
                fix = f"rename `{key}=` to `{meant}=` (the parameter of TRL {version}); or " + fix
            yield hit(
                f"`{shown}` in {call.where}: {call.cls}.{call.method} of TRL {ctx.trl.label()} "
                f"takes no `{key}`; the call raises TypeError (unexpected keyword argument) {when}",
                fix=fix,
                severity=ctx.on_trl("error"),
                call=f"{call.cls}.{call.method}",
                keyword=key,
                where=call.where,
                takes=_spans(takes, releases) if takes else None,
                remedy=cands or None,
            )


def _unsloth_takes(script: Any, call: Any, key: str, row: dict[str, Any], bit: int) -> bool:
    """Unsloth's patched trainers (the script imports unsloth, which replaces TRL's trainer
    classes with its own) build their constructor from TRL's parameters plus ``**kwargs``
    (unsloth/models/rl.py's template, ``def __init__({RLTrainer_arguments}, **kwargs)``, in every
    release read from 2025.3): no keyword raises TypeError there. ``tokenizer`` it even passes on as
    ``processing_class`` (unslothai/unsloth#1701, February 2025)."""
    return call.method == "__init__" and getattr(script, "patched_by", None) == "unsloth"


def _dev_neighbours(ctx: Context, version: str, releases: list[str]) -> tuple[str, str, str] | None:
    """For a TRL dev build (``0.15.0.dev0``, a main commit): the release before it and the release
    it leads to, both in the history, and how it was placed (a pinned commit by TRL's main-branch
    table, else the version it installs as); None for a release or a build not between two."""
    parsed = versions.parse(version)
    if parsed is None or not parsed.is_prerelease:
        return None
    declared = ((ctx.facts.extra.get("declared") or {}).get("stack") or {}).get("trl")
    ref = next((d.ref for d in getattr(declared, "decls", ()) if getattr(d, "ref", None)), "")
    how = f"TRL {version} (a build of TRL's main branch)"
    before: str | None = None
    after: str | None = ".".join(map(str, parsed.release))
    if ref and getattr(declared, "how", "") == "git":
        from envdoctor.knowledge.trl_commits import place

        where = place(ref)
        before, after, how = where.before, where.after, f"{where.said()} (pinned commit {ref[:10]})"
    if before is None:
        older = [r for r in releases if versions.satisfies(r, f"<{after}")]
        before = older[-1] if older else None
    if before not in releases or after not in releases:
        return None
    return before, str(after), how


def _dev_build_keywords(ctx: Context, call: Any, table: dict[str, Any], releases: list[str]) -> Iterator[Hit]:
    """CFG008 for a TRL dev build: a keyword neither the release before the build nor the release
    it leads to takes (with the method the class's own in both) is said as a warning; the build's
    own signature is not in the history (envdoctor holds releases only)."""
    near = _dev_neighbours(ctx, str(ctx.trl.version), releases)
    if near is None:
        return
    before, after, how = near
    row = table["methods"].get(call.method) or {}
    bits = [1 << releases.index(before), 1 << releases.index(after)]
    for key in call.keywords:
        scope, have = int(row.get("@", 0)), int(row.get(key, 0)) | int(row.get("**", 0))
        if not all(scope & b for b in bits) or any(have & b for b in bits):
            continue
        takes = [r for i, r in enumerate(releases) if have >> i & 1]
        shown = f"{call.cls}({key}=…)" if call.method == "__init__" else f"{call.method}({key}=…)"
        yield hit(
            f"`{shown}` in {call.where}: the TRL that runs is {how}; {call.cls}.{call.method} takes no "
            f"`{key}` in TRL {before} before it nor in TRL {after} after it, so this build most likely "
            "raises TypeError (unexpected keyword argument) at that call (a dev build's own "
            "signature is not in envdoctor's history of releases)",
            fix=f"remove `{key}=` from the call"
            + (f", or install a release that takes it ({_spans(takes, releases)})" if takes else ""),
            severity="warning",
            call=f"{call.cls}.{call.method}",
            keyword=key,
            where=call.where,
            between=[before, after],
            remedy=None,
        )


def _renames(ctx: Context) -> dict[str, str]:
    """Keywords TRL's trainers and GRPOConfig took by another name (or another library's name
    for the same setting), old -> new (rules/knowledge/trl.yaml's ``keyword_renames``:
    ``tokenizer`` -> ``processing_class``)."""
    return {str(r["old"]): str(r["new"]) for r in ctx.kb.trl.get("keyword_renames") or [] if r.get("old")}


def _meant(
    key: str, taken: list[str], given: tuple[str, ...], renames: dict[str, str] | None = None
) -> str | None:
    """The parameter the call most likely meant by ``key``: one the method takes in this
    release, that the call does not pass yet, and that is its known new name (``tokenizer`` ->
    ``processing_class``) or reads close to it (``reward_function`` -> ``reward_funcs``)."""
    import difflib

    free = [k for k in taken if k not in given]
    renamed = (renames or {}).get(key)
    if renamed in free:
        return renamed
    close = difflib.get_close_matches(key, free, n=1, cutoff=0.75)
    return close[0] if close else None


def _rename_keyword(call: Any, key: str, meant: str) -> list[Remedy]:
    """CFG008's first candidate where the call names a parameter of this release by another
    spelling: the keyword renamed in the script (a line edit)."""
    for name, line, col, text in getattr(call, "places", ()):
        raw = text.encode("utf-8")
        if name == key and raw[col : col + len(key)] == key.encode():
            new = (raw[:col] + meant.encode() + raw[col + len(key) :]).decode("utf-8")
            path = str(call.where).rsplit(":", 1)[0]
            return [
                Remedy(
                    files=(FileEdit(path=path, line=line, old=(text,), new=(new,)),),
                    fix=f"rename `{key}=` to `{meant}=` in the call in {call.where}",
                )
            ]
    return []


def _drop_keyword(call: Any, key: str) -> list[Remedy]:
    """CFG008's first candidate: the keyword taken out of the call in the script (a line edit
    the script reader cut from the call's text), when it could be cut cleanly."""
    for name, line, old, new in getattr(call, "drops", ()):
        if name == key:
            path = str(call.where).rsplit(":", 1)[0]
            return [
                Remedy(
                    files=(FileEdit(path=path, line=line, old=old, new=new),),
                    fix=f"remove `{key}=` from the call in {call.where}",
                )
            ]
    return []


def _spans(have: list[str], releases: list[str]) -> str:
    """``0.15.0–0.19.1, 1.2.0`` for the releases of ``have`` in the history's order."""
    runs: list[list[str]] = []
    last = -2
    for r in have:
        i = releases.index(r)
        if i == last + 1 and runs:
            runs[-1].append(r)
        else:
            runs.append([r])
        last = i
    return ", ".join(run[0] if len(run) == 1 else f"TRL {run[0]}–{run[-1]}" for run in runs)


def _drop_first(d: dict[str, Any]) -> Remedy | None:
    """CFG007's fix as data: the first entry's lines deleted, so the file says what runs now
    (the value yaml.safe_load keeps); none where the entry shares its line (a flow mapping) or
    starts a list item (``- key: …``: deleting the line would end the item)."""
    lines = d.get("first_text")
    name = str(d["key"]).rsplit(".", 1)[-1]
    if not lines or not lines[0].lstrip().startswith(name) or lines[0].lstrip().startswith("-"):
        return None
    first = int(d["first_line"])
    shown = f"{first}" if len(lines) == 1 else f"{first}–{first + len(lines) - 1}"
    return Remedy(
        files=(FileEdit(path=str(d["file"]), line=int(d["first_line"]), old=tuple(lines)),),
        fix=f"delete line {shown} of {d['file']} (the first `{d['key']}`; the run keeps `{d['last']}`)",
    )


@rule("CFG007")
def config_duplicate_key(ctx: Context) -> Iterator[Hit]:
    """A key set twice in one mapping of a config file: yaml.safe_load (TRL's parser,
    accelerate) keeps the last value silently, so the run is not what the first line says."""
    for d in ctx.plan.duplicate_keys:
        key, file, first, last = d["key"], d["file"], d["first_line"], d["last_line"]
        if d["same"]:
            yield hit(
                f"`{key}` is set twice in {file} (lines {first} and {last}), both to `{d['last']}`: "
                "the same run either way, but the next edit of one of them is silently undone by the other",
                fix=f"delete line {first} of {file} (`{key}` at line {last} stays)",
                severity="info",
                remedy=_drop_first(d),
                file=file,
                line=first,
                key=key,
            )
            continue
        yield hit(
            f"`{key}` is set twice in {file}: line {first} says `{d['first']}`, line {last} says "
            f"`{d['last']}`; yaml.safe_load (TRL's parser and accelerate read the file with it) keeps "
            f"the last without a word, so the run uses `{d['last']}` (line {last}), not the `{d['first']}` "
            f"a reader sees at line {first}",
            fix=(
                f"keep one `{key}` in {file}: delete line {first} to keep what runs now (`{d['last']}`), "
                f"or delete line {last} if `{d['first']}` is what you meant"
            ),
            remedy=_drop_first(d),
            file=file,
            line=last,
            key=key,
            first_line=first,
            last_line=last,
            first_value=d["first"],
            used_value=d["last"],
        )
