"""When a known failure holds for this stack: the known-failures catalogue's ``when`` (KNF001) and
vllm.yaml's ``known_bad`` ``when`` (PKG007), judged against the facts and the plan. Read by the
rules and by the package resolver (which judges the conditions other than versions).

An entry matches when ALL of its ``when`` holds: every package installed (or declared exactly, or
``--assume``d) inside its range, every config value as the GRPO config sets it (or as that TRL
release defaults it), the launcher, the platform, and none of the ``unless_env`` escapes set. A
condition that cannot be judged (no config, no launch line) does not match: no guessed errors.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context, LayoutUnresolved
from envdoctor.knowledge import checkable_failures
from envdoctor.knowledge.failures import KnownFailure
from envdoctor.plan.interface import from_config_object
from envdoctor.plan.layout import trainer_env, vllm_mode
from envdoctor.plan.values import as_bool

_MISSING = object()


def config_default(ctx: Context, key: str) -> Any:
    """The default of GRPO config ``key`` in the installed TRL release, or ``_MISSING`` (also
    where the training script computes the key: TRL's default is not its value)."""
    if ctx.plan.computed(key):
        return _MISSING
    entry = ctx.kb.config_key(key) or {}
    trl = ctx.version("trl")
    if not entry or versions.parse(trl) is None or ctx.kb.has_config_key(key, trl) is not True:
        return _MISSING
    value: Any = entry.get("default", _MISSING)
    for step in entry.get("default_history") or []:
        if not versions.below(trl, str(step.get("since", "0"))):
            value = step.get("default", _MISSING)
    return value


_COMPARE = re.compile(r"^(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _same(value: Any, wanted: Any) -> bool:
    if wanted == "*":
        return True  # any value the config sets
    if isinstance(wanted, bool):
        return as_bool(value) is wanted
    compare = _COMPARE.match(wanted) if isinstance(wanted, str) else None
    if compare:  # "<1", ">0": a number the config's value is compared with
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            return False
        return number is not None and _OPS[compare.group(1)](number, float(compare.group(2)))
    return str(value) == str(wanted)


def _config_holds(ctx: Context, key: str, wanted: tuple[Any, ...]) -> bool:
    if not ctx.config:
        return False  # no GRPO config given: a config condition cannot be judged
    if key == "use_vllm":
        value: Any = ctx.plan.use_vllm
    elif key == "vllm_mode":
        value = vllm_mode(ctx.plan, ctx.facts, ctx.kb)
    elif key in ctx.config:
        origin = ctx.plan.config_origin.get(key, "")
        if all(w == "*" for w in wanted) and from_config_object(origin):
            return False  # a GRPOConfig object holds every field its __post_init__ fills: not "set"
        value = ctx.config[key]
    elif "*" in wanted:
        return False  # "*": the config must set the key itself
    else:
        value = config_default(ctx, key)
    return value is not _MISSING and value is not None and any(_same(value, w) for w in wanted)


def config_holds(ctx: Context, key: str, wanted: tuple[Any, ...]) -> bool:
    """Whether the run's config (or TRL's default for it) gives ``key`` one of ``wanted``, as a
    ``when.config`` condition is judged ("*": the config sets it)."""
    return _config_holds(ctx, key, wanted)


def _config_sets(ctx: Context, key: str, wanted: tuple[Any, ...]) -> bool:
    """Whether the config itself sets ``key`` to one of ``wanted`` ("*": to anything but null):
    a ``when.unless_config`` escape. A GRPOConfig object's field left at its default is unset.
    ``a.b``: the value at ``b`` of the mapping ``a`` (``gradient_checkpointing_kwargs.use_reentrant``)."""
    value = ctx.config.get(key)
    if value is None and "." in key:
        outer, _, inner = key.partition(".")
        nested = ctx.config.get(outer)
        value = nested.get(inner) if isinstance(nested, dict) else None
    if value is None:
        return False
    if from_config_object(ctx.plan.config_origin.get(key, "")) and value == config_default(ctx, key):
        return False
    return any(_same(value, w) for w in wanted)


def _launcher(ctx: Context) -> str | None:
    trainer = ctx.plan.trainer
    if trainer is None or trainer.unresolved:
        return None
    return "trl" if trainer.launcher.startswith("trl-") else trainer.launcher


def _strategy(ctx: Context) -> str | None:
    """ddp / zero1-3 / fsdp, as the memory plan reads it from the accelerate and DeepSpeed configs."""
    from envdoctor.plan.memory.knobs import from_config

    trainer = ctx.plan.trainer
    if trainer is None or trainer.unresolved:
        return None
    k = from_config(ctx.config, ctx.version("trl"), None, ctx.plan.accelerate, trainer.options)
    return "fsdp" if str(k.strategy).startswith("fsdp") else str(k.strategy)


def _fsdp_version(ctx: Context) -> str:
    """FSDP's version as ``accelerate launch`` reads it: ``--fsdp_version``, else the accelerate
    config's ``fsdp_config.fsdp_version``, else 1 (accelerate's default)."""
    trainer = ctx.plan.trainer
    acc = ctx.plan.accelerate if isinstance(ctx.plan.accelerate, dict) else {}
    raw = acc.get("fsdp_config")
    fsdp: dict[str, Any] = raw if isinstance(raw, dict) else {}
    opts = trainer.options if trainer is not None else {}
    return str(opts.get("fsdp_version", fsdp.get("fsdp_version", 1))).strip()


def _launch_holds(ctx: Context, key: str, wanted: tuple[str, ...]) -> bool:
    if key == "launcher":
        return _launcher(ctx) in wanted
    if key == "server":
        return ctx.plan.server is not None and ctx.plan.server.launcher in wanted
    strategy = _strategy(ctx)
    if strategy == "fsdp" and "fsdp2" in wanted and _fsdp_version(ctx) == "2":
        return True
    return strategy in wanted


def _platforms(ctx: Context) -> set[str]:
    system = ctx.facts.platform.split("-", 1)[0].lower()
    found = {"macos" if system == "darwin" else system} if system else set()
    torch = versions.parse(ctx.version("torch"))
    local = (torch.local or "") if torch is not None else ""
    found |= {name for name in ("rocm", "xpu") if local.startswith(name)}
    return found


def _env(ctx: Context) -> dict[str, str]:
    """The trainer's and the server's environment, names folded to upper case (``http_proxy``
    and ``HTTP_PROXY`` are the same setting to the libraries that read them)."""
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    if ctx.plan.server is not None:
        env.update(ctx.plan.server.env)
    return {k.upper(): v for k, v in env.items()}


def _env_has(env: dict[str, str], names: str, value: str) -> bool:
    """Whether any of ``names`` (``A|B``) is set in ``env`` to ``value`` (``*``: to anything)."""
    return any(
        name.upper() in env and (value == "*" or env[name.upper()] == value) for name in names.split("|")
    )


#: an option of the trainer's launch line that asks its program for GRPO (``--rlhf_type grpo``,
#: ``--trainer=grpo``): a framework's entry point told to train with GRPO
_ASKS_GRPO = re.compile(r"^--?[\w.-]+(?:=|$)")


def runs_grpo(ctx: Context) -> tuple[bool | None, str]:
    """Whether the run builds TRL's GRPOTrainer (or a class deriving from it), and the evidence:
    True where the training script read builds one, ``trl grpo`` runs, or the launch line asks its
    program for GRPO (``--rlhf_type grpo``); False where the script read builds only other
    trainers (SFTTrainer, a repository class deriving from transformers' Trainer) or the launch
    runs another TRL command (``trl sft``); None where neither shows (the script not read, or it
    builds no trainer envdoctor knows), with why."""
    trainer = ctx.plan.trainer
    if trainer is not None and trainer.launcher.startswith("trl-") and not trainer.is_server:
        cmd = trainer.launcher.removeprefix("trl-")
        return cmd == "grpo", f"the launch line runs `trl {cmd}`"
    script = ctx.plan.script
    if script is not None and not script.problem:
        if script.builds_grpo:
            return True, f"the run builds it ({script.builds_grpo})"
        other = script.trl_other_trainer or script.own_trainer
        if other:
            return False, f"{script.path} builds {other}, no GRPOTrainer"
    words = trainer.raw.split() if trainer is not None else []
    for i, word in enumerate(words):
        opt, eq, value = word.partition("=")
        value = value if eq else words[i + 1] if i + 1 < len(words) else ""
        if _ASKS_GRPO.match(word) and value.strip("'\"").lower() == "grpo":
            return True, f"the launch line asks for GRPO ({opt} {value})"
    if script is None:
        return None, "no launch line names the training script"
    if script.problem:
        return None, f"the training script was not read: {script.problem}"
    return None, f"{script.path} builds no trainer envdoctor knows"


def matches(ctx: Context, failure: KnownFailure) -> bool:
    """Whether every condition of ``failure.when`` holds for this stack. A package installed at
    a placeholder version (``0+unknown``: which release is not recorded) holds no range: the
    failure is not known to apply, and saying it would state what envdoctor cannot know."""
    for name, spec in failure.packages.items():
        have = ctx.version(name)
        if have is None and name in version_unknown(ctx, failure):
            continue  # the script imports it and no release is known: said, at warning (KNF001)
        if versions.placeholder(have) or versions.satisfies(have, spec) is not True:
            return False
    if any(script_fact(ctx, fact) is None for fact in failure.facts):
        return False
    for key, wanted in failure.config.items():
        if not _config_holds(ctx, key, wanted):
            return False
    if any(_config_sets(ctx, key, wanted) for key, wanted in failure.unless_config.items()):
        return False
    if failure.unless_imported and imported_escape(ctx, failure) is not None:
        return False  # KNF001 says it as info
    if failure.unless_script_sets and script_sets(ctx, failure) is not None:
        return False  # KNF001 says it as info
    for key, wanted in failure.launch.items():
        if not _launch_holds(ctx, key, wanted):
            return False
    if failure.trainer == "grpo" and runs_grpo(ctx)[0] is False:
        return False  # the run builds another trainer (an SFT or DPO stage)
    if failure.platform and not _platforms(ctx) & set(failure.platform):
        return False
    if failure.env or failure.unless_env:
        env = _env(ctx)
        if not all(_env_has(env, names, value) for names, value in failure.env.items()):
            return False
        if any(_env_has(env, names, value) for names, value in failure.unless_env.items()):
            return False
    return True


def script_fact(ctx: Context, fact: str) -> str | None:
    """Where the training script read shows a ``when.facts`` fact (``WHEN_FACTS``), or None
    (it does not, or the script was not read)."""
    script = ctx.plan.script
    if script is None or script.problem:
        return None
    if fact == "vllm_in_process_off":
        return script.vllm_in_process_off
    return None


def version_unknown(ctx: Context, failure: KnownFailure) -> tuple[str, ...]:
    """The packages of an entry that requires facts of the training script (``when.facts``)
    which that script imports (``patched_by``) while no release of them is known: not
    installed, not declared exactly, not ``--assume``d. The script shows the failure's trigger,
    and which release runs is what is not seen: KNF001 says it as a warning."""
    script = ctx.plan.script
    if not failure.facts or script is None or script.problem or not script.patched_by:
        return ()
    return tuple(
        n
        for n, spec in failure.packages.items()
        if n == script.patched_by and ctx.version(n) is None and _declared_may_be(ctx, n, spec)
    )


def declared_spec(ctx: Context, name: str) -> str | None:
    """The range the repository declares for ``name`` without an exact release, or None."""
    from envdoctor.facts.interface import normalize_name

    stack = (ctx.facts.extra.get("declared") or {}).get("stack") or {}
    for key, entry in stack.items():
        if normalize_name(key) == name and getattr(entry, "spec", None):
            return str(entry.spec)
    return None


def _declared_may_be(ctx: Context, name: str, spec: str) -> bool:
    """Whether the range declared for ``name`` (none: any) may hold a release inside ``spec``:
    some release either names as a bound is inside both (``>=2026.6`` declared misses
    ``>=2025.2.1,<2026.5.9``)."""
    declared = declared_spec(ctx, name)
    if not declared:
        return True
    named = re.findall(r"\d+(?:\.\d+)*", f"{declared},{spec}")
    bounds = [*named, *(f"{b}.1" for b in named)]  # an exclusive bound (>2025.3): just above it
    return any(
        versions.satisfies(b, declared) is not False and versions.satisfies(b, spec) is not False
        for b in bounds
    )


def script_sets(ctx: Context, failure: KnownFailure) -> tuple[str, str] | None:
    """The attribute of ``when.unless_script_sets`` the training script read (or a repository
    module it imports) assigns on an object, and where (``model.warnings_issued = {}`` in
    train.py:264); None where it assigns none, or was not read."""
    script = ctx.plan.script
    if script is None or script.problem:
        return None
    for attr in failure.unless_script_sets:
        where = script.attr_writes.get(attr)
        if where:
            return attr, where
    return None


def imported_escape(ctx: Context, failure: KnownFailure) -> str | None:
    """The library the training script imports that patches ``failure`` away (``when.
    unless_imported``), or None: the script was read, imports it, and the release of it in the
    stack is one that patches (or is not known: it is installed where the script runs, and
    which release envdoctor cannot tell; a version 0 is no release either)."""
    script = ctx.plan.script
    if script is None or script.problem or not script.patched_by:
        return None
    spec = failure.unless_imported.get(script.patched_by)
    if spec is None:
        return None
    have = versions.parse(ctx.version(script.patched_by))
    if have is not None and have.release != (0,) and versions.satisfies(str(have), spec) is False:
        return None  # a release before the patch
    return script.patched_by


def imported_unseen(ctx: Context, failure: KnownFailure) -> str | None:
    """Why a library that may patch ``failure`` away was not seen: it is in the stack
    (installed or declared) and the training script was not read; None otherwise."""
    script = ctx.plan.script
    if script is not None and not script.problem:
        return None
    declared = (ctx.facts.extra.get("declared") or {}).get("stack") or {}
    for name, spec in failure.unless_imported.items():
        have = ctx.version(name) or ("declared" if name in declared else None)
        if have and versions.satisfies(have, spec) is not False:
            why = script.problem if script is not None else "no launch line names the training script"
            return (
                f"unless the training script imports {name} {spec}, which patches it on import "
                f"({name} {have} is in the stack; the script was not read: {why})"
            )
    return None


def matching(ctx: Context) -> list[KnownFailure]:
    """Catalogue entries that match this stack and that no other rule reports (entries marked
    triage_only describe failures whose trigger only shows in the run: triage reads them).
    Kept on the context (KNF001, PKG004's deference and the package resolver ask)."""
    found: list[KnownFailure] | None = ctx.__dict__.get("_matching")
    if found is None:
        found = [
            f
            for f in checkable_failures()
            if f.rule is None and not f.triage_only and framework_keeps(ctx, f) and _matches_here(ctx, f)
        ]
        ctx.__dict__["_matching"] = found
    return found


def _matches_here(ctx: Context, failure: KnownFailure) -> bool:
    """``matches``; for another framework's run (plan.framework), whose processes TRL's layout
    does not describe, an entry whose condition needs that layout (``vllm_mode``, the world size)
    does not hold, rather than every package rule being left out with the launch unresolved."""
    try:
        return matches(ctx, failure)
    except LayoutUnresolved:
        if ctx.plan.framework is None:
            raise
        return False


def framework_keeps(ctx: Context, failure: KnownFailure) -> bool:
    """Whether a catalogue entry's premise holds for the framework that trains (plan.framework):
    an entry of TRL's release or of GRPOTrainer's own needs TRL's GRPOTrainer to run, one
    conditioned on GRPOConfig keys needs TRL's parser to read them, one on the launch layout needs
    TRL's layout. Entries of the packages alone (vLLM with torch, the allocator) always hold."""
    framework = ctx.plan.framework
    if framework is None:
        return True
    from envdoctor.plan.framework import leaves_out  # loaded only where another framework trains

    if leaves_out(framework, "trl-trainer") and ("trl" in failure.packages or failure.trainer == "grpo"):
        return False
    if leaves_out(framework, "trl-keys") and (failure.config or failure.unless_config):
        return False
    return not (leaves_out(framework, "trl-layout") and failure.launch)


def confirmed_break(ctx: Context, *names: str) -> KnownFailure | None:
    """A matching entry whose versions involve every package of ``names`` (KNF001 reports it)."""
    return next((f for f in matching(ctx) if all(n in f.packages for n in names)), None)


def when_holds(ctx: Context, when: dict[str, Any]) -> bool:
    for key, cond in when.items():
        if key == "use_vllm":
            if bool(cond) != ctx.plan.use_vllm:
                return False
            continue
        if key == "vllm_mode":
            if ctx.plan.framework is not None and ctx.resolved.unresolved:
                return False  # another framework's processes: TRL's generation mode is not theirs
            if ctx.layout.generation_mode != cond:
                return False
            continue
        if key == "world_size_above":  # more training processes than that (no launch line, or
            # one whose processes are not resolved: there may be)
            # (another framework's run: its processes are its own, an unresolved layout is "may be")
            lay = ctx.resolved if ctx.plan.framework is not None else ctx.layout
            known = ctx.plan.trainer is not None and lay.unresolved is None
            if known and ctx.layout.world_size <= int(cond):
                return False
            continue
        if key.startswith("config."):
            if ctx.config.get(key[7:]) != cond:
                return False
            continue
        if key.startswith("env."):
            value = trainer_env(ctx.facts, ctx.plan.trainer).get(key[4:], "")
            if str(cond.get("contains", "")) not in value:
                return False
            continue
        have = ctx.version(key)
        if versions.placeholder(have) or versions.satisfies(have, str(cond)) is not True:
            return False
    return True
