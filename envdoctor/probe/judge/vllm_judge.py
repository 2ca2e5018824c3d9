"""Judge the vLLM half of a probe: the server's fate, vLLM's own errors, who held which GPU."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envdoctor.coerce import as_int
from envdoctor.findings import Finding, Severity
from envdoctor.probe.judge.failures import SYNC_FATAL, VllmContext, classify_vllm, sync_timeout
from envdoctor.units import size_text

if TYPE_CHECKING:
    from envdoctor.probe.interface import ProbeResult, ProbeSpec
    from envdoctor.probe.observe.watcher import GpuWatch

_GENERIC = "the GRPO step failed on rank"


def gib(mib: int) -> str:
    """MiB as a person reads them: ``23.8 GiB`` or ``412 MiB``."""
    return size_text(mib, of="MiB", step_down=True)


def _context(
    spec: ProbeSpec, result: ProbeResult, part: str, visible: list[int], cvd: str | None
) -> VllmContext:
    rank0 = result.ranks.get(0, {})
    size = max(int(result.server.get("tp", 1)) * int(result.server.get("dp", 1)), 1)
    training = {g for g in spec.rank_gpus.values() if g is not None}
    shared = sorted(training & set(spec.server_visible[:size])) if result.server else []
    return VllmContext(
        part=part,
        visible=visible,
        cvd=cvd,
        holders=result.holders,
        group_port=result.server.get("group_port"),
        user_group_port=as_int(spec.vllm.get("vllm_group_port")),
        address=rank0.get("sync_address"),
        interface=rank0.get("sync_interface"),
        shared_gpus=shared,
        vllm_install=spec.vllm_install,
    )


def _remote_sync(spec: ProbeSpec, result: ProbeResult) -> list[Finding]:
    """A training node of a job whose server runs on another node: the weight-sync group's
    failure as the trainer's own log shows it (NCCL refusing the group, the store timing out),
    named as such (PRB015) instead of as a failed step."""
    assert spec.remote_server is not None
    host, _port, group_port = spec.remote_server
    ctx = replace(_context(spec, result, f"the job's vLLM server on {host}", [], None), group_port=group_port)
    text = _rank_text(result)
    found = [x for x in classify_vllm(text, ctx) if x.rule == "PRB015"]
    fatal = SYNC_FATAL.search(text)
    if not found and (fatal or (result.status == "timeout" and result.phase == "weight sync")):
        found.append(sync_timeout(ctx, fatal.group(0)[:200] if fatal else ""))
    return found[:1]


def _rank_text(result: ProbeResult) -> str:
    parts = []
    for data in result.ranks.values():
        err = data.get("error") or {}
        if err:
            parts.append(f"{err.get('type')}: {err.get('message')}\n{err.get('traceback', '')}")
    return "\n".join(parts) + "\n" + result.log_tail


def judge_vllm(spec: ProbeSpec, result: ProbeResult, server_watch: GpuWatch | None) -> None:
    """Add the vLLM findings to ``result`` (after the generic judge ran)."""
    if not spec.use_vllm:
        return
    f = result.findings
    new: list[Finding] = []
    srv = result.server
    trainer_cvd = spec.env.get("CUDA_VISIBLE_DEVICES")
    if spec.vllm_mode in ("colocate", "legacy"):
        part = (
            "the in-process vLLM of the trainer (colocate)"
            if spec.vllm_mode == "colocate"
            else f"TRL's in-process vLLM on vllm_device={spec.vllm.get('vllm_device', 'auto')}"
        )
        new += classify_vllm(
            _rank_text(result), _context(spec, result, part, spec.trainer_visible, trainer_cvd)
        )
    if spec.vllm_mode == "colocate":
        new += _headroom(spec, result)
    faithful = (
        spec.model.name if spec.model is not None and result.model.get("ran") == "the user's shape" else None
    )
    if spec.vllm_mode in ("colocate", "legacy"):
        new += _start_crash(spec, _rank_text(result), faithful=faithful)
    if srv.get("pid"):
        ctx = _context(spec, result, "the probe vLLM server", spec.server_visible, srv.get("visible"))
        server_found = classify_vllm(srv.get("log", ""), ctx) or _start_crash(
            spec, srv.get("log", ""), "the probe vLLM server", faithful
        )
        new += server_found
        trainer_ctx = _context(spec, result, "the probe vLLM server", spec.server_visible, srv.get("visible"))
        new += [
            x
            for x in classify_vllm(_rank_text(result), trainer_ctx)
            if x.rule == "PRB015" and not any(y.rule == "PRB015" for y in new)
        ]
        if srv.get("died") is not None and not server_found:
            tail = [ln for ln in srv.get("log_tail", "").splitlines() if ln.strip()][-4:]
            new.append(
                Finding(
                    "PRB001",
                    Severity.ERROR,
                    f"the probe vLLM server exited (code {srv['died']}) "
                    + (
                        "before it answered /health"
                        if "server_healthy" not in result.events
                        else "while the trainer ran"
                    )
                    + (": " + " | ".join(tail)[-400:] if tail else ""),
                    "run the server line by hand to see the whole error",
                    {"argv": srv.get("argv"), "log_tail": srv.get("log_tail", "")[-3000:]},
                )
            )
        stuck = (
            result.status == "timeout"
            and "server_healthy" in result.events
            and result.phase in ("trainer init", "weight sync")
        )
        if (stuck or srv.get("sync_failed")) and not any(x.rule == "PRB015" for x in new):
            new.append(sync_timeout(ctx, srv.get("sync_failed", "")))
        _server_isolation(spec, result, server_watch, new)
    elif spec.vllm_mode == "server" and spec.remote_server is not None:
        new += _remote_sync(spec, result)
    if new:
        if {x.rule for x in new} & {"PRB013", "PRB014", "PRB015", "PRB018", "PRB021"}:  # the named cause
            f[:] = [x for x in f if not x.message.startswith(_GENERIC)]
        if any(x.rule == "PRB015" for x in new):  # NCCL's part of it, said once
            f[:] = [x for x in f if x.rule != "TRI002"]
        f.extend(new)
    _user_server(result)
    if result.status == "pass" and any(x.severity == Severity.ERROR for x in f):
        result.status = "fail"
    elif (
        result.status == "fail"
        and any(x.rule == "PRB018" for x in f)
        and not any(x.severity == Severity.ERROR for x in f)
    ):
        result.status = "inconclusive"  # vLLM's start crashed on the probe's model, not proven


#: vLLM's engine start (profiling, KV-cache set-up, CUDA-graph capture, warm-up): a crash there
#: with the probe's tiny model says nothing sure about the user's model
_START_FRAMES = (
    "capture_model",
    "compile_or_warm_up_model",
    "_initialize_kv_caches",
    "profile_run",
    "_dummy_run",
    "determine_available_memory",
)
_DEVICE_FAULT = (
    "an illegal memory access was encountered",
    "misaligned address",
    "unspecified launch failure",
    "an illegal instruction was encountered",
)


def _start_crash(
    spec: ProbeSpec, text: str, part: str | None = None, faithful: str | None = None
) -> list[Finding]:
    """A CUDA fault inside vLLM's engine start with the probe's tiny model (PRB018): a warning,
    not the user's error. vLLM 0.26.0's FA3 kernels were seen to fault so on an H100 with
    TRL's colocate max_num_seqs 8 where 4 and 32 started (docs/validation/probe-vllm-h100.md)."""
    fault = next((x for x in _DEVICE_FAULT if x in text), None)
    frame = next((x for x in _START_FRAMES if x in text), None)
    if fault is None or frame is None:
        return []
    where = part or (
        "the in-process vLLM of the trainer (colocate)"
        if spec.vllm_mode == "colocate"
        else "TRL's in-process vLLM (vllm_device)"
    )
    seqs = None
    if spec.vllm_mode == "colocate":
        tp = as_int(spec.vllm.get("vllm_tensor_parallel_size")) or 1
        seqs = spec.per_device_train_batch_size * tp * max(spec.gradient_accumulation_steps, 1)
    if faithful is not None:
        return [
            Finding(
                "PRB021",
                Severity.ERROR,
                f"{where} crashed while starting ({frame}): CUDA error: {fault}, with a model of "
                f"{faithful}'s shape (same attention, heads, head dim, vocabulary and positions; "
                "fewer layers, eager)"
                + (f" at TRL's max_num_seqs {seqs}" if seqs else "")
                + ": your run's vLLM will start the same kernels on the same shapes",
                "change TRL's max_num_seqs (per_device_train_batch_size × steps_per_generation) or "
                "vllm_max_model_length, or use another vLLM release; envdoctor explain PRB021",
                {"fault": fault, "frame": frame, "max_num_seqs": seqs, "model": faithful},
            )
        ]
    return [
        Finding(
            "PRB018",
            Severity.WARNING,
            f"{where} crashed while starting ({frame}): CUDA error: {fault}, with the probe's own "
            "generic model (your model's config.json is not on this machine), not yours; such faults "
            "of vLLM's attention kernels depend on the model's shape and the batch vLLM captures"
            + (f" (max_num_seqs {seqs} here)" if seqs else "")
            + ", so this does not show that your model fails; generation was not probed (a defect of "
            "envdoctor's generic model: please report it)",
            "run one real step with your model (max_steps: 1) to see whether vLLM starts; if it "
            "faults the same way, a different per_device_train_batch_size × steps_per_generation "
            "(TRL's max_num_seqs) or another vLLM release is the way around it",
            {"fault": fault, "frame": frame, "max_num_seqs": seqs},
        )
    ]


#: below this, no trainable policy fits beside vLLM: Adam in mixed precision holds ~16 bytes per
#: parameter, so 1 GiB is ~67 M parameters before any activation
HEADROOM_ERROR_MIB = 1024
HEADROOM_WARN_SHARE = 0.05


def _headroom(spec: ProbeSpec, result: ProbeResult) -> list[Finding]:
    """Colocate: the room the training step had beside vLLM's reservation (torch's free memory
    on the rank's GPU right before and after the step, the smaller)."""
    out = []
    util = spec.vllm.get("vllm_gpu_memory_utilization", "TRL's default")
    for rank, data in sorted(result.ranks.items()):
        free, total = data.get("gpu_free_mib"), data.get("gpu_total_mib")
        if not data.get("ok") or free is None or not total:
            continue
        gpu = spec.rank_gpus.get(rank)
        where = f"GPU {gpu}" if gpu is not None else str(data.get("device"))
        if free >= max(HEADROOM_ERROR_MIB, HEADROOM_WARN_SHARE * total):
            continue
        severity = Severity.ERROR if free < HEADROOM_ERROR_MIB else Severity.WARNING
        out.append(
            Finding(
                "PRB017",
                severity,
                f"rank {rank}'s training step had {gib(free)} free on {where} ({gib(total)}) beside "
                f"its in-process vLLM (vllm_gpu_memory_utilization {util}): the probe's tiny model "
                "fit, the real model's weights, gradients, optimizer states (~16 bytes per parameter "
                "with Adam in mixed precision) and activations must fit there too",
                "lower vllm_gpu_memory_utilization (TRL's colocate default is 0.3), or set "
                "vllm_enable_sleep_mode: true so vLLM frees its memory during the step",
                {
                    "rank": rank,
                    "gpu": gpu,
                    "free_mib": free,
                    "total_mib": total,
                    "vllm_gpu_memory_utilization": util,
                },
            )
        )
    return out


def _server_isolation(
    spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None, out: list[Finding]
) -> None:
    """Where the probe server held memory (NVML): only on its own GPUs."""
    if watch is None or watch.error is not None:
        return
    srv = result.server
    size = max(int(srv.get("tp", 1)) * int(srv.get("dp", 1)), 1)
    own = set(spec.server_visible[:size]) if spec.server_visible else None
    peak: dict[int, int] = {}
    for (pid, gpu), sample in watch.seen.items():
        peak[gpu] = max(peak.get(gpu, 0), sample.max_mib)
        if own is not None and gpu not in own:
            out.append(
                Finding(
                    "PRB003",
                    Severity.ERROR,
                    f"the probe vLLM server (pid {pid}) held {gib(sample.max_mib)} on GPU {gpu}, "
                    f"outside its GPUs {sorted(own)}",
                    "check the server's CUDA_VISIBLE_DEVICES and its parallel sizes",
                    {"pid": pid, "gpu": gpu, "mib": sample.max_mib},
                )
            )
    srv["peak_mib"] = peak


def _user_server(result: ProbeResult) -> None:
    us = result.user_server
    if not us:
        return
    before = {(p, g): m for p, g, m in us.get("processes_before", [])}
    after = {(p, g): m for p, g, m in us.get("processes_after", [])}
    changed = [k for k in before if after.get(k) != before[k]]
    same_health = us.get("health_before") == us.get("health_after")
    us["unchanged"] = same_health and not changed
    msg = (
        (
            f"the running server {us.get('url')} was only read: /health "
            f"{us.get('health_before')} before and {us.get('health_after')} after; its "
            + ", ".join(
                f"pid {p} on GPU {g}: {gib(m or 0)} before, {gib(after.get((p, g)) or 0)} after"
                for (p, g), m in before.items()
            )
        )
        if before
        else (
            f"the running server {us.get('url')} was only read: /health "
            f"{us.get('health_before')} before and {us.get('health_after')} "
            "after"
        )
    )
    result.findings.append(
        Finding(
            "PRB012", Severity.INFO if us["unchanged"] else Severity.WARNING, msg, "nothing to do", dict(us)
        )
    )
