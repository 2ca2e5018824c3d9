"""Rules on the CUDA caching allocator settings the training processes will start with."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.plan.alloc_conf import parse_alloc_conf
from envdoctor.plan.layout import trainer_env

VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def _confs(ctx: Context) -> dict[str, str]:
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    return {v: env[v] for v in VARS if v in env}


@rule("ALC001")
def invalid(ctx: Context) -> Iterator[Hit]:
    for var, raw in _confs(ctx).items():
        conf = parse_alloc_conf(raw)
        for problem in conf.problems:
            yield hit(f"{var}={raw}: {problem}; torch raises at the first CUDA allocation",
                      fix=f"export {var}=expandable_segments:True  # or fix the option's "
                      "spelling: key:value pairs separated by commas",
                      variable=var, value=raw)


@rule("ALC002")
def disagree(ctx: Context) -> Iterator[Hit]:
    confs = _confs(ctx)
    if len(confs) == 2 and confs[VARS[0]].replace(" ", "") != confs[VARS[1]].replace(" ", ""):
        torch = ctx.version("torch")
        new = versions.at_least(torch, "2.9")
        winner = VARS[1] if new else VARS[0]
        yield hit(f"{VARS[0]}={confs[VARS[0]]} and {VARS[1]}={confs[VARS[1]]} differ; "
                  f"torch {torch or '(not installed)'} uses {winner}", severity="warning",
                  fix=f"set one of them only (unset {VARS[0] if new else VARS[1]})", **confs)


@rule("ALC003", needs=("gpus", "plan"))
def expandable_recommended(ctx: Context) -> Iterator[Hit]:
    confs = _confs(ctx)
    if any(parse_alloc_conf(v).expandable_segments for v in confs.values()):
        return
    if ctx.config.get("vllm_enable_sleep_mode"):
        return  # ALC004's territory: expandable segments break vLLM's sleep-mode pool
    if ctx.layout.training:
        yield hit("PYTORCH_CUDA_ALLOC_CONF does not enable expandable segments: GRPO's varying "
                  "sequence lengths fragment the caching allocator, and an OOM can strike with "
                  "GiBs 'reserved but unallocated'",
                  fix="export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")


@rule("ALC004", needs=("vllm",))
def expandable_vs_sleep(ctx: Context) -> Iterator[Hit]:
    if not ctx.config.get("vllm_enable_sleep_mode") or ctx.layout.generation_mode != "colocate":
        return
    for var, raw in _confs(ctx).items():
        if parse_alloc_conf(raw).expandable_segments:
            yield hit(f"{var}={raw} with vllm_enable_sleep_mode: vLLM's sleep mode allocates "
                      "through its own CUDA memory pool, which refuses expandable segments "
                      "(\"Expandable segments are not compatible with memory pool\")",
                      fix=f"unset expandable_segments in {var}, or turn off "
                      "vllm_enable_sleep_mode", variable=var)
