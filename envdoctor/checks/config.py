"""Rules on the GRPO config itself, judged against the installed TRL version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.knowledge import release_said
from envdoctor.knowledge.keys import presence, span
from envdoctor.plan.values import small_divisors, type_problem

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


@rule("CFG001", needs=("plan",))
def config_key_wrong_version(ctx: Context) -> Iterator[Hit]:
    trl, said = ctx.trl.version, ctx.trl.label()
    keys = ctx.kb.grpo_keys.get("keys") or {}
    if not keys or versions.parse(trl) is None:
        return
    for key, origin in ctx.plan.config_origin.items():
        entry = keys.get(key)
        if entry is None or key in NOT_CONFIG or entry.get("overrides_training_arguments"):
            continue  # TrainingArguments fields are accepted by every GRPOConfig
        since, until = entry.get("since"), entry.get("until")
        if _deprecated(entry, trl):
            dep = entry.get("deprecated_help") or {}
            repl = entry.get("replaced_by") or dep.get("use_instead")
            yield hit(
                f"`{key}` ({origin}) is deprecated in TRL {said} (from {dep['first']})"
                + (f" ({entry['note'].rstrip(';. ')})" if entry.get("note") else ""),
                fix=f"remove `{key}`" + (f"; configure `{repl}` instead" if repl else ""),
                severity="warning",
                key=key,
                trl=trl,
            )
            continue
        too_old = since and versions.below(trl, str(since))
        too_new = until and versions.at_least(trl, str(until))
        if not (too_old or too_new):
            continue
        repl = entry.get("replaced_by")
        if too_new:
            msg = (
                f"`{key}` ({origin}) was removed from GRPOConfig in TRL {until}; "
                f"{_installed(ctx)}TRL {said} "
                f"{_parser_does(ctx)} (it exists in {_span(entry)})"
            )
            fix = (
                f"replace `{key}` with `{repl}`" if repl else f"remove `{key}`"
            ) + f", or pin 'trl<{until}'"
        else:
            msg = f"`{key}` ({origin}) is not known to TRL {said}: it exists in {_span(entry)}"
            fix = f"pip install 'trl>={since}'"
            if repl:
                fix += f", or use `{repl}` with this TRL"
        yield hit(msg, fix=fix, key=key, trl=trl, since=since, until=until, severity=ctx.on_trl())
    yield from _training_arguments_gone(ctx)


def _parser_does(ctx: Context) -> str:
    """What the installed TRL's parser does with a config key no dataclass has."""
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
        if key not in fields or key in grpo or key in scripts:
            continue
        if presence(table, key, tf) != "no":
            continue
        entry = table["keys"][key]
        gone = entry.get("until") and versions.at_least(tf, str(entry["until"]))
        yield hit(
            f"`{key}` ({origin}) is not a TrainingArguments field of the installed "
            f"transformers {tf} (it exists in {span(table, key, 'transformers')}): TRL "
            f"{ctx.trl.label()} {_parser_does(ctx)}",
            fix=(
                f"remove `{key}`, or pin 'transformers<{entry['until']}'"
                if gone
                else f"pip install 'transformers>={entry['since']}', or remove `{key}`"
            ),
            key=key,
            transformers=tf,
        )


def _script_keys(ctx: Context) -> set[str]:
    """Keys of the other dataclasses TRL's GRPO script parses (ModelConfig, ScriptArguments…),
    of any TRL release: they are not GRPOConfig's to judge."""
    table = ctx.kb.parser_keys.get("trl_script_arguments") or {}
    return set(table.get("keys") or {}) | NOT_CONFIG


@rule("CFG002", needs=("plan",))
def batch_not_divisible(ctx: Context) -> Iterator[Hit]:
    cfg = ctx.config
    lay = ctx.layout
    try:
        gens = int(cfg.get("num_generations", 8))
        per_device = int(cfg.get("per_device_train_batch_size", 8))
        accum = int(cfg.get("gradient_accumulation_steps", 1))
    except (TypeError, ValueError, OverflowError):
        return
    world = max(lay.world_size, 1) if ctx.plan.trainer else max(len(lay.training), 1)
    if gens < 2:
        return
    gen_batch = cfg.get("generation_batch_size")
    steps = cfg.get("steps_per_generation")
    rule_entry = next(
        (
            r
            for r in ctx.kb.trl.get("grpo_batch_rule", [])
            if versions.satisfies(ctx.trl.version, str(r.get("trl", "")))
        ),
        None,
    )
    formula = str((rule_entry or {}).get("global_batch") or "")
    if rule_entry is not None and not formula:
        return  # this TRL release checks nothing (0.14)
    if formula.startswith("per_device_train_batch_size * num_processes"):
        total = per_device * world
        what = f"per_device_train_batch_size ({per_device}) × processes ({world})"
        if "gradient_accumulation_steps" in formula:
            total *= accum
            what += f" × gradient_accumulation_steps ({accum})"
    elif isinstance(gen_batch, int):
        total, what = gen_batch, f"generation_batch_size ({gen_batch})"
    else:
        steps = int(steps) if isinstance(steps, int) else accum
        total = per_device * world * steps
        what = (
            f"per_device_train_batch_size ({per_device}) × processes ({world}) × "
            f"steps_per_generation ({steps})"
        )
    if total % gens:
        good = small_divisors(total)  # bounded: total may have 15 digits
        fix = f"set num_generations to a divisor of {total}: {', '.join(map(str, good[:6]))}"
        need = gens // _gcd(total, gens)
        fix += f"; or make per_device_train_batch_size a multiple of {need}"
        yield hit(
            f"the global batch {total} = {what} is not divisible by num_generations "
            f"({gens}): TRL refuses at init",
            fix=fix,
            total=total,
            num_generations=gens,
        )


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@rule("CFG003", needs=("plan",))
def num_generations_too_small(ctx: Context) -> Iterator[Hit]:
    gens = ctx.config.get("num_generations")
    if isinstance(gens, int) and not isinstance(gens, bool) and gens < 2:
        yield hit(
            f"num_generations is {gens}: GRPO normalizes rewards within each group, "
            "so it needs at least 2 completions per prompt",
            fix="set num_generations: 2 or more (TRL's default is 8)",
            num_generations=gens,
        )


MAX_TYPO_KEYS = 200  # a config with thousands of unknown keys is not a typo


@rule("CFG004", needs=("plan",))
def config_key_typo(ctx: Context) -> Iterator[Hit]:
    keys = ctx.kb.grpo_keys.get("keys") or {}
    if not keys:
        return
    ta = ctx.kb.parser_keys.get("training_arguments") or {}
    ta_keys = set(ta.get("keys") or {})
    scripts = _script_keys(ctx)
    known = set(keys) | ta_keys | scripts
    unknown = [k for k in ctx.plan.config_origin if k not in known]
    if not unknown:
        return
    import difflib  # only for a config with keys to match

    trl, tf = ctx.trl.version, ctx.version("transformers")
    current = {
        k
        for k, e in keys.items()  # prefer keys this TRL accepts
        if not (e.get("until") and versions.at_least(trl, str(e["until"])))
        and not (e.get("since") and versions.below(trl, str(e["since"])))
    }
    current |= {k for k in ta_keys if presence(ta, k, tf) != "no"} | scripts
    preferred, everything = sorted(current), sorted(known)
    own: list[str] = []  # no close match: the script's own dataclass keys, most likely
    for key in unknown[:MAX_TYPO_KEYS]:
        origin = ctx.plan.config_origin[key]
        close = difflib.get_close_matches(key, preferred, n=1, cutoff=0.85) or difflib.get_close_matches(
            key, everything, n=1, cutoff=0.85
        )
        if not close:
            own.append(key)
            continue
        guess = close[0]
        msg = (
            f"`{key}` ({origin}) is not a field of GRPOConfig, TrainingArguments or TRL's "
            f"script arguments in any release envdoctor knows; did you mean `{guess}`?"
        )
        fix = f"rename `{key}` to `{guess}`"
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
        elif guess not in current:  # a TrainingArguments field of another transformers
            msg += (
                f" (a TrainingArguments field of {span(ta, guess, 'transformers')}, not of "
                f"the installed transformers {tf})"
            )
            fix = f"remove `{key}`; `{guess}` needs {span(ta, guess, 'transformers')}"
        yield hit(msg, fix=fix, key=key, suggestion=guess)
    if own:
        shown = ", ".join(f"`{k}`" for k in own[:8]) + (f" and {len(own) - 8} more" if len(own) > 8 else "")
        yield hit(
            f"{shown}: not keys of GRPOConfig, TrainingArguments or TRL's own script "
            "arguments; fine when your script's dataclasses declare them (as open-r1's "
            "declare system_prompt), else TRL's parser "
            f"{_parser_does(ctx)}",
            fix="nothing, if your training script parses them",
            severity="info",
            keys=own,
        )


@rule("CFG005", needs=("plan",))
def config_value_type(ctx: Context) -> Iterator[Hit]:
    types = field_types(ctx.kb.grpo_keys.get("keys") or {})
    for key, origin in ctx.plan.config_origin.items():
        if key not in types or key not in ctx.config:
            continue
        kind, optional = types[key]
        value = ctx.config[key]
        problem = type_problem(value, kind, optional)
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
            yield hit(
                f"`{key}: {value!r}` ({origin}) is {problem}: {effect}",
                fix=f"give `{key}` {wanted}",
                key=key,
                value=repr(value),
                expected=kind,
            )
