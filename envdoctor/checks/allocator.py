"""Rules on the CUDA caching allocator settings the training processes will start with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.alloc_conf import parse_alloc_conf
from envdoctor.plan.layout import trainer_env

VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def _torch_rules(ctx: Context) -> tuple[set[str] | None, str]:
    """Options the installed torch accepts and its unknown-option message (rules/knowledge)."""
    torch = ctx.version("torch")
    table = ctx.kb.allocator
    if versions.parse(torch) is None or not table.get("options"):
        return None, "Unrecognized CachingAllocator option: {name}"
    accepted = {
        o["name"] for o in table["options"] if versions.satisfies(torch, str(o.get("torch", ""))) is not False
    }
    text = next(
        (
            e["text"].split("  (")[0]
            for e in table.get("unknown_option_error", [])
            if versions.satisfies(torch, str(e.get("torch", "")))
        ),
        "Unrecognized CachingAllocator option: {name}",
    )
    return accepted, text


def _env_vars_read(ctx: Context) -> dict[str, Any]:
    torch = ctx.version("torch")
    return next(
        (
            e
            for e in ctx.kb.allocator.get("env_vars", [])
            if versions.satisfies(torch, str(e.get("torch", "")))
        ),
        {},
    )


def _confs(ctx: Context) -> dict[str, str]:
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    return {v: env[v] for v in VARS if v in env}


def _expandable(var: str) -> Remedy:
    return Remedy(env_set={var: "expandable_segments:True"}, fix=f"export {var}=expandable_segments:True")


def _without_expandable(raw: str) -> Remedy:
    """``PYTORCH_CUDA_ALLOC_CONF`` without its expandable_segments option (unset when empty)."""
    rest = ",".join(o.strip() for o in raw.split(",") if o.strip() and "expandable_segments" not in o)
    if rest:
        return Remedy(env_set={VARS[0]: rest}, fix=f"export {VARS[0]}={rest}")
    return Remedy(env_unset=(VARS[0],), fix=f"unset {VARS[0]}")


@rule("ALC001", needs=("cuda",))
def alloc_conf_invalid(ctx: Context) -> Iterator[Hit]:
    accepted, text = _torch_rules(ctx)
    for var, raw in _confs(ctx).items():
        conf = parse_alloc_conf(raw, accepted, text)
        for problem in conf.problems:
            shown = raw if len(raw) <= 120 else f"{raw[:120]}… ({len(raw):,} characters)"
            yield hit(
                f"{var}={shown}: {problem}; torch raises at the first CUDA allocation",
                fix=f"export {var}=expandable_segments:True  # or fix the option's "
                "spelling: key:value pairs separated by commas",
                remedy=[
                    Remedy(env_set={var: kept}, fix=f"export {var}={kept}  # the options torch accepts")
                    for kept in [_without_problems(raw, accepted, text)]
                    if kept
                ]
                + [
                    Remedy(
                        env_set={var: "expandable_segments:True"},
                        fix=f"export {var}=expandable_segments:True",
                    )
                ],
                variable=var,
                value=raw[:1000],
            )


def _without_problems(raw: str, accepted: set[str] | None, text: str) -> str:
    """``raw`` with each option that has a problem left out ('' when none is left)."""
    kept = [o for o in raw.split(",") if o.strip() and not parse_alloc_conf(o, accepted, text).problems]
    return ",".join(o.strip() for o in kept)


@rule("ALC002", needs=("cuda",))
def alloc_conf_disagree(ctx: Context) -> Iterator[Hit]:
    confs = _confs(ctx)
    evidence: dict[str, Any] = dict(confs)  # the variables as the finding's evidence
    torch = ctx.version("torch")
    read = _env_vars_read(ctx)
    if len(confs) == 2 and confs[VARS[0]].replace(" ", "") != confs[VARS[1]].replace(" ", ""):
        prec = read.get("precedence")
        which = (
            f"torch {torch}: {prec}"
            if prec and prec != "unknown"
            else f"which one torch {torch or '(not installed)'} applies is not documented"
        )
        yield hit(
            f"{VARS[0]}={confs[VARS[0]]} and {VARS[1]}={confs[VARS[1]]} differ ({which})",
            severity="warning",
            fix="set only one of them",
            remedy=[
                Remedy(env_unset=(other,), fix=f"unset {other}  # keep {keep}={confs[keep]}")
                for keep, other in ((VARS[1], VARS[0]), (VARS[0], VARS[1]))
            ],
            **evidence,
        )
    elif VARS[1] in confs and VARS[0] not in confs and read and VARS[1] not in read.get("read", []):
        yield hit(
            f"{VARS[1]} is set but torch {torch} reads only {VARS[0]}: the setting has no effect",
            severity="warning",
            fix=f"export {VARS[0]}={confs[VARS[1]]}",
            remedy=Remedy(
                env_set={VARS[0]: confs[VARS[1]]},
                env_unset=(VARS[1],),
                fix=f"export {VARS[0]}={confs[VARS[1]]}; unset {VARS[1]}",
            ),
            **evidence,
        )


@rule("ALC003", needs=("gpus", "plan", "cuda"))
def expandable_segments_recommended(ctx: Context) -> Iterator[Hit]:
    confs = _confs(ctx)
    if any(parse_alloc_conf(v).expandable_segments for v in confs.values()):
        return
    if ctx.config.get("vllm_enable_sleep_mode"):
        return  # ALC004's territory: expandable segments break vLLM's sleep-mode pool
    if ctx.layout.training:
        var = next(iter(confs), VARS[0])
        value = ",".join([*filter(None, [confs.get(var, "").strip(" ,")]), "expandable_segments:True"])
        yield hit(
            "PYTORCH_CUDA_ALLOC_CONF does not enable expandable segments: GRPO's varying "
            "sequence lengths fragment the caching allocator, and an OOM can strike with "
            "GiBs 'reserved but unallocated'",
            fix=f"export {var}={value}",
            remedy=Remedy(env_set={var: value}),
        )


@rule("ALC004", needs=("vllm", "cuda"))
def expandable_segments_vs_vllm_sleep(ctx: Context) -> Iterator[Hit]:
    """vLLM 0.8.0–0.20.0 asserts in sleep mode when PYTORCH_CUDA_ALLOC_CONF has expandable
    segments; 0.20.1+ switches them off itself (rules/knowledge/vllm.yaml)."""
    if not ctx.config.get("vllm_enable_sleep_mode") or ctx.layout.generation_mode != "colocate":
        return
    vllm = ctx.version("vllm")
    if vllm is not None and not versions.below(vllm, "0.20.1"):
        return
    raw = _confs(ctx).get(VARS[0])
    if raw and parse_alloc_conf(raw).expandable_segments:
        yield hit(
            f"{VARS[0]}={raw} with vllm_enable_sleep_mode and vLLM {vllm or '(not installed)'}"
            ": vLLM's sleep-mode memory pool asserts (\"Expandable segments are not "
            'compatible with memory pool")',
            fix=f"unset expandable_segments in {VARS[0]}, turn off vllm_enable_sleep_mode, "
            "or pip install 'vllm>=0.20.1'",
            remedy=[
                _without_expandable(raw),
                Remedy(config_set={"vllm_enable_sleep_mode": False}, fix="set vllm_enable_sleep_mode: false"),
            ],
            variable=VARS[0],
            vllm=vllm,
        )
