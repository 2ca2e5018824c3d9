"""The probe's report area: run the probe for a checked plan and summarise what it proved."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from envdoctor.findings import Severity
from envdoctor.report.interface import Area
from envdoctor.units import size_text

if TYPE_CHECKING:
    from envdoctor.checks.context import Context
    from envdoctor.probe.interface import ProbeResult


def probe_area(ctx: Context, timeout: float = 180.0, on_phase: Callable[[str], None] | None = None) -> Area:
    """Run the probe for the plan in ``ctx`` and return its report area; ``on_phase`` hears
    each phase as it starts."""
    from envdoctor.probe.plan.spec import batch_shape, spec_from_context
    from envdoctor.probe.run.runner import run_probe

    if ctx.resolved.unresolved:
        from envdoctor.errors import InputError

        raise InputError("--probe", f"launch not resolved: {ctx.resolved.unresolved}")

    spec = spec_from_context(ctx, timeout_s=timeout)
    result = run_probe(spec, on_phase=on_phase)
    area = Area(key="probe", title="Probe", ran=["probe"])
    area.findings = list(result.findings)
    if result.status == "not run":  # a line over several nodes: nothing was launched (PRB022)
        area.summary = f"not run: the launch line spans several nodes ({spec.multi_node})"
        return area
    area.data = {
        "status": result.status,
        "model": result.model,
        "vllm": _engine(result),
        "weight_sync": result.weight_sync,
        "data": result.data,
        "rewards": result.rewards,
        "isolation": result.isolation,
        "timings": result.timings,
    }
    ranks = result.ranks
    where = ", ".join(f"rank {r}→{d.get('device', '?')}" for r, d in sorted(ranks.items()))
    steps = [s for d in ranks.values() if (s := d.get("step_s")) is not None]
    generation = result.generation
    if any(d.get("vllm_enforce_eager") for d in ranks.values()):
        generation += " (eager: the probe skips torch.compile and CUDA graphs for its tiny model)"
    _, notes = batch_shape(ctx.config)
    shape = (
        f"batch {spec.per_device_train_batch_size}/rank × {spec.gradient_accumulation_steps}"
        f", {spec.num_generations} generations"
    )
    area.summary = (
        f"{result.status}: {len(ranks)} rank(s) [{where}] in {result.wall_s:.1f} s"
        + f"; model: {_model_text(result.model)}"
        + (f", step {max(steps):.2f} s" if steps else "")
        + f"; {shape}"
        + "".join(f" ({n})" for n in notes)
        + f"; isolation {result.isolation}; generation through {generation}"
        + _server_text(result)
        + _user_text(result)
        + "; phases: "
        + ", ".join(result.phase_lines)
    )
    if result.isolation == "proved":
        area.findings.append(_info(f"isolation proved: {result.isolation_detail}"))
    if result.leftover_pids:
        area.findings.append(
            _info(f"processes left after the probe: {result.leftover_pids}", Severity.WARNING)
        )
    return area


def _engine(result: ProbeResult) -> dict[str, Any]:
    """probe.vllm: what TRL passed to LLM() (seen in the rank), else what the probe planned."""
    if not result.vllm:
        return {}
    seen = next((d["vllm_engine"] for d in result.ranks.values() if d.get("vllm_engine")), None)
    out = dict(result.vllm)
    if seen:
        out.update(
            {
                "max_model_len": seen.get("max_model_len"),
                "max_num_seqs": seen.get("max_num_seqs", out.get("max_num_seqs")),
                "tensor_parallel_size": seen.get("tensor_parallel_size", out.get("tensor_parallel_size")),
                "sleep_mode": bool(seen.get("enable_sleep_mode", out.get("sleep_mode"))),
                "gpu_memory_utilization": seen.get(
                    "gpu_memory_utilization", out.get("gpu_memory_utilization")
                ),
                "eager": bool(seen.get("enforce_eager", True)),
                "as_trl_passed": seen,
            }
        )
    return out


def _model_text(model: dict[str, Any]) -> str:
    """One line: which model ran and how it differs from the user's."""
    if model.get("ran") == "the user's shape":
        shape = (
            f"{model.get('architecture')} shape of {model.get('source')} (hidden "
            f"{model.get('hidden_size')}, {model.get('num_attention_heads')} heads / "
            f"{model.get('kv_heads')} KV, head dim {model.get('head_dim')}, vocab "
            f"{model.get('vocab_size')}, {model.get('max_position_embeddings')} positions)"
        )
        diff = "; ".join(model.get("deviations") or [])
        return shape + (f", differs in: {diff}" if diff else "")
    why = "; ".join(model.get("deviations") or [])
    return "the generic tiny model" + (f" ({why})" if why else "")


def _user_text(result: ProbeResult) -> str:
    """On what the step ran: the user's rows and reward functions, or the probe's own."""
    data, rewards = result.data, result.rewards
    if not data and not rewards:
        return ""
    rows = (
        f"{data.get('rows_passed')} rows of {data.get('dataset')}"
        if data.get("used")
        else "the probe's own prompts"
    )
    funcs = rewards.get("functions") or []
    reward = (
        f"{len(funcs)} reward function(s) of the user's ({', '.join(f['name'] for f in funcs)})"
        if rewards.get("used")
        else "the probe's own reward"
    )
    return f"; data: {rows}, {reward}"


def _server_text(result: ProbeResult) -> str:
    srv = result.server
    if not srv.get("pid"):
        return ""
    held = ", ".join(f"GPU {g} {size_text(m, of='MiB')}" for g, m in sorted(srv.get("peak_mib", {}).items()))
    syncs = max((d.get("sync_calls", 0) for d in result.ranks.values()), default=0)
    return (
        f" (gpu_memory_utilization {srv.get('fraction')}"
        + (f", held {held}" if held else "")
        + f"; {syncs} weight sync(s) over NCCL port {srv.get('group_port')}"
        + ("; started while the weights were written" if srv.get("started_before_weights") else "")
        + ")"
    )


def _info(message: str, severity: Severity = Severity.INFO):
    from envdoctor.findings import Finding

    return Finding("PRB012", severity, message, "nothing to do")
