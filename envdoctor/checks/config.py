"""Rules on the GRPO config itself, judged against the installed TRL version."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.plan.values import small_divisors, type_problem

#: Keys in a TRL config file that are not GRPOConfig fields but are read by TRL's parser
#: or the example scripts (model and script arguments).
NOT_CONFIG = {"env", "config", "model_name_or_path", "dataset_name", "dataset_config",
              "dataset_train_split", "dataset_test_split", "torch_dtype", "dtype",
              "attn_implementation", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
              "lora_target_modules", "load_in_4bit", "load_in_8bit", "trust_remote_code",
              "model_revision", "reward_model_name_or_path"}

#: transformers.TrainingArguments fields that rules read (GRPOConfig inherits them).
TRAINING_ARGUMENT_TYPES = {
    "per_device_train_batch_size": ("int", False), "gradient_accumulation_steps": ("int", False),
    "max_steps": ("int", False), "seed": ("int", False), "num_train_epochs": ("float", False),
    "learning_rate": ("float", False), "bf16": ("bool", False), "fp16": ("bool", False),
    "gradient_checkpointing": ("bool", False), "use_cpu": ("bool", False)}
#: GRPOConfig fields whose default is null, typed by their annotation (``int | None`` …).
OPTIONAL_TYPES = {"generation_batch_size": "int", "steps_per_generation": "int",
                  "max_prompt_length": "int", "vllm_device": "str", "vllm_server_host": "str",
                  "vllm_server_base_url": "str", "vllm_gpu_memory_utilization": "float"}


def field_types(keys: dict) -> dict[str, tuple[str, bool]]:
    """Key → (int | float | bool | str, may be null), from the defaults TRL declared."""
    out = dict(TRAINING_ARGUMENT_TYPES)
    for key, entry in keys.items():
        defaults = [entry.get("default")] + [d.get("default") for d in
                                             entry.get("default_history") or []]
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


def _span(entry: dict) -> str:
    since, until = entry.get("since"), entry.get("until")
    if until:
        return f"TRL {since} up to (not including) {until}"
    return f"TRL {since} and newer"


@rule("CFG001", needs=("plan",))
def key_unknown_for_version(ctx: Context) -> Iterator[Hit]:
    trl = ctx.version("trl")
    keys = (ctx.kb.grpo_keys.get("keys") or {})
    if not keys or versions.parse(trl) is None:
        return
    for key, origin in ctx.plan.config_origin.items():
        entry = keys.get(key)
        if entry is None or key in NOT_CONFIG or entry.get("overrides_training_arguments"):
            continue  # TrainingArguments fields are accepted by every GRPOConfig
        since, until = entry.get("since"), entry.get("until")
        dep = entry.get("deprecated_help") or {}
        if dep.get("first") and versions.at_least(trl, str(dep["first"])) and not (
                until and versions.at_least(trl, str(until))):
            repl = entry.get("replaced_by")
            yield hit(f"`{key}` ({origin}) is deprecated and ignored by TRL {trl}"
                      + (f" ({entry['note'].rstrip(';. ')})" if entry.get("note") else ""),
                      fix=f"remove `{key}`" + (f"; configure `{repl}` instead" if repl else ""),
                      severity="warning", key=key, trl=trl)
            continue
        too_old = since and versions.below(trl, str(since))
        too_new = until and versions.at_least(trl, str(until))
        if not (too_old or too_new):
            continue
        repl = entry.get("replaced_by")
        if too_new:
            msg = (f"`{key}` ({origin}) was removed from GRPOConfig in TRL {until}; "
                   f"installed TRL {trl} rejects it (it exists in {_span(entry)})")
            fix = (f"replace `{key}` with `{repl}`" if repl else f"remove `{key}`") + \
                f", or pin 'trl<{until}'"
        else:
            msg = (f"`{key}` ({origin}) is not known to TRL {trl}: it exists in {_span(entry)}")
            fix = f"pip install 'trl>={since}'"
            if repl:
                fix += f", or use `{repl}` with this TRL"
        yield hit(msg, fix=fix, key=key, trl=trl, since=since, until=until)


@rule("CFG002", needs=("plan",))
def batch_divisible(ctx: Context) -> Iterator[Hit]:
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
    rule_entry = next((r for r in ctx.kb.trl.get("grpo_batch_rule", [])
                       if versions.satisfies(ctx.version("trl"), str(r.get("trl", "")))), None)
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
        what = (f"per_device_train_batch_size ({per_device}) × processes ({world}) × "
                f"steps_per_generation ({steps})")
    if total % gens:
        good = small_divisors(total)  # bounded: total may have 15 digits
        fix = f"set num_generations to a divisor of {total}: {', '.join(map(str, good[:6]))}"
        need = gens // _gcd(total, gens)
        fix += f"; or make per_device_train_batch_size a multiple of {need}"
        yield hit(f"the global batch {total} = {what} is not divisible by num_generations "
                  f"({gens}): TRL refuses at init", fix=fix, total=total, num_generations=gens)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@rule("CFG003", needs=("plan",))
def num_generations_min(ctx: Context) -> Iterator[Hit]:
    gens = ctx.config.get("num_generations")
    if isinstance(gens, int) and not isinstance(gens, bool) and gens < 2:
        yield hit(f"num_generations is {gens}: GRPO normalizes rewards within each group, "
                  "so it needs at least 2 completions per prompt", fix="set num_generations: 2 "
                  "or more (TRL's default is 8)", num_generations=gens)


MAX_TYPO_KEYS = 200  # a config with thousands of unknown keys is not a typo


@rule("CFG004", needs=("plan",))
def key_typo(ctx: Context) -> Iterator[Hit]:
    keys = ctx.kb.grpo_keys.get("keys") or {}
    known = set(keys) | set(ctx.kb.grpo_keys.get("training_arguments", [])) | NOT_CONFIG
    if not keys:
        return
    unknown = [k for k in ctx.plan.config_origin if k not in known]
    if not unknown:
        return
    trl = ctx.version("trl")
    current = {k for k, e in keys.items()  # prefer keys this TRL accepts
               if not (e.get("until") and versions.at_least(trl, str(e["until"])))
               and not (e.get("since") and versions.below(trl, str(e["since"])))}
    preferred, everything = sorted(known & current | (known - set(keys))), sorted(known)
    for key in unknown[:MAX_TYPO_KEYS]:
        origin = ctx.plan.config_origin[key]
        close = (difflib.get_close_matches(key, preferred, n=1, cutoff=0.85)
                 or difflib.get_close_matches(key, everything, n=1, cutoff=0.85))
        if not close:
            continue
        guess = close[0]
        msg = (f"`{key}` ({origin}) is not a GRPOConfig field in any TRL release; "
               f"did you mean `{guess}`?")
        fix = f"rename `{key}` to `{guess}`"
        entry = keys.get(guess)
        if entry is not None and guess not in current:  # a key of another TRL era
            repl = entry.get("replaced_by")
            msg += f" (a key of {_span(entry)}, not of the installed TRL {trl})"
            fix = (f"TRL {trl} replaced `{guess}` with `{repl}`: set that instead of `{key}`" if repl
                   else f"remove `{key}`; `{guess}` needs {_span(entry)}")
        yield hit(msg, fix=fix, key=key, suggestion=guess)


@rule("CFG005", needs=("plan",))
def value_type(ctx: Context) -> Iterator[Hit]:
    types = field_types(ctx.kb.grpo_keys.get("keys") or {})
    for key, origin in ctx.plan.config_origin.items():
        if key not in types or key not in ctx.config:
            continue
        kind, optional = types[key]
        value = ctx.config[key]
        problem = type_problem(value, kind, optional)
        if problem:
            if isinstance(value, str):
                said = ("Truthy value expected" if kind == "bool"
                        else f"invalid {kind} value: {value!r}")
                effect = f"TRL's parser stops with \"{said}\" before training"
            else:
                effect = "TRL's parser passes it through and the trainer fails on it later"
            wanted = {"int": "an integer, e.g. 8", "float": "a number, e.g. 0.5",
                      "bool": "true or false", "str": "a string"}[kind]
            yield hit(f"`{key}: {value!r}` ({origin}) is {problem}: {effect}",
                      fix=f"give `{key}` {wanted}", key=key, value=repr(value), expected=kind)
