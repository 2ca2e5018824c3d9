"""Judge the trainer half of a probe: from what the lifecycle observed (rank results, exit code,
log tail, NVML samples) to the verdict and its findings. Nothing here starts, waits for or ends
a process, or writes a file; the vLLM half is judged in vllm_judge, the weight-sync proof in
sync_judge."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from envdoctor.findings import Finding, Severity
from envdoctor.probe.judge.failures import classify
from envdoctor.probe.judge.vllm_judge import gib

if TYPE_CHECKING:
    from envdoctor.probe.interface import ProbeResult, ProbeSpec
    from envdoctor.probe.observe.watcher import GpuWatch


def multi_node(spec: ProbeSpec) -> Finding:
    """A line over several nodes: the probe is not run (PRB022)."""
    return Finding(
        "PRB022",
        Severity.WARNING,
        f"the probe was not run: the launch line spans several nodes and its rendezvous would dial "
        f"{spec.multi_node}, waiting for the other nodes until the limit; the probe runs on this "
        "one node and contacts loopback only",
        "probe the whole job from inside it: your launch line with `-m envdoctor check "
        "--distributed --probe` in place of the script, on every node (docs/cluster.md); or this "
        "node's share with a one-node line (e.g. torchrun --nproc_per_node N train.py)",
        {"rendezvous": spec.multi_node},
    )


def rendezvous_moved(moved: list[str]) -> Finding:
    """The ranks met on loopback, not where the line points (PRB012)."""
    return Finding(
        "PRB012",
        Severity.INFO,
        "the probe's ranks met on loopback (one node), not "
        f"where the launch line points ({', '.join(moved)})",
        "nothing to do",
        {"replaced": moved},
    )


def not_started(what: str, argv: list[str], exc: OSError, fix: str) -> Finding:
    """A process of the probe could not be started (PRB001)."""
    return Finding(
        "PRB001",
        Severity.ERROR,
        f"could not start {what} {argv[0]!r}: {exc.strerror or exc}",
        fix,
        {"argv": argv},
    )


def not_written(tmp: str, exc: OSError) -> Finding:
    """The probe's temp dir (model, spec, logs) could not be written (PRB001)."""
    return Finding(
        "PRB001",
        Severity.ERROR,
        f"the probe could not write its files in {tmp}: {exc.strerror or exc}",
        "free disk space in TMPDIR, or point TMPDIR elsewhere",
        {"path": tmp},
    )


def judge_run(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    f = result.findings
    if result.status == "timeout":
        f.append(
            Finding(
                "PRB006",
                Severity.ERROR,
                f"the probe did not finish within {spec.timeout_s:.0f} s (it was at: "
                f"{result.phase}); every process of it was ended",
                "a hang at 'step' with several ranks is usually a collective waiting "
                "for a rank (NCCL); run with NCCL_DEBUG=INFO, or raise --probe-timeout "
                "if the machine is just slow",
                {"phase": result.phase},
            )
        )
    if result.status == "interrupted":
        f.append(
            Finding(
                "PRB006",
                Severity.ERROR,
                "the probe was interrupted; every process of it was ended",
                "run it again",
                {"phase": result.phase},
            )
        )
    texts = []
    failed = [r for r, d in result.ranks.items() if d.get("finished") and d.get("error")]
    for rank, data in sorted(result.ranks.items()):
        if not data.get("finished"):
            ended_by_probe = result.server.get("died") is not None or result.server.get("sync_failed")
            if ended_by_probe and result.status == "ran":
                why = (
                    "the vLLM server exited"
                    if result.server.get("died") is not None
                    else "NCCL refused the weight-sync group"
                )
                f.append(
                    Finding(
                        "PRB001",
                        Severity.INFO,
                        f"rank {rank} (pid {data.get('pid')}) was ended by the probe after {why}",
                        "see the vLLM finding",
                        {"rank": rank},
                    )
                )
            elif result.status == "ran" and failed:  # the launcher ended it after another failed
                f.append(
                    Finding(
                        "PRB001",
                        Severity.INFO,
                        f"rank {rank} (pid {data.get('pid')}) was ended by the launcher "
                        f"after rank {failed[0]} failed",
                        f"see rank {failed[0]}'s error",
                        {"rank": rank},
                    )
                )
            elif result.status == "ran":
                code = result.returncode
                killed = code in (-9, 137) or "SIGKILL" in result.log_tail
                last = [ln for ln in result.log_tail.splitlines() if ln.strip()][-3:]
                f.append(
                    Finding(
                        "PRB001",
                        Severity.ERROR,
                        f"rank {rank} (pid {data.get('pid')}) died without a result "
                        f"(launcher exit code {code}"
                        + ("; killed, by the OOM killer?)" if killed else ")")
                        + (": " + " | ".join(last)[-300:] if last else ""),
                        "check `dmesg` for the OOM killer" if killed else "see the rank's log (-v)",
                        {"log_tail": result.log_tail[-3000:]},
                    )
                )
            continue
        err = data.get("error")
        if err:
            texts.append(f"{err.get('type')}: {err.get('message')}\n{err.get('traceback', '')}")
        judge_rank(spec, rank, data, f)
    program = shutil.which(spec.launcher[0]) or spec.launcher[0] if spec.launcher else None
    known = (
        classify("\n".join(texts) + "\n" + result.log_tail, program, spec.packages)
        if texts or (result.status == "ran" and result.returncode)
        else []
    )
    seen = {(x.rule, x.message) for x in f}
    f.extend(x for x in known if (x.rule, x.message) not in seen)
    failed_ranks = [r for r, d in result.ranks.items() if d.get("error")]
    if failed_ranks and not known:
        first = result.ranks[failed_ranks[0]]["error"]
        f.append(
            Finding(
                "PRB001",
                Severity.ERROR,
                f"the GRPO step failed on rank {failed_ranks[0]}: {first.get('type')}: "
                f"{str(first.get('message'))[:300]}",
                "see the last lines of the rank's log (-v)",
                {"log_tail": result.log_tail[-3000:]},
            )
        )
    if result.status == "ran" and not result.ranks and result.server.get("died") is None:
        f.append(
            Finding(
                "PRB001",
                Severity.ERROR,
                f"the launcher exited ({result.returncode}) before any rank started",
                "run the launch command by hand to see why",
                {"log_tail": result.log_tail[-3000:]},
            )
        )
    judge_isolation(spec, result, watch)
    errors = [x for x in f if x.severity == Severity.ERROR]
    if result.status == "ran":
        result.status = "fail" if errors else "pass"


def judge_rank(spec: ProbeSpec, rank: int, data: dict, f: list[Finding]) -> None:
    refused = "does not support `nn.DataParallel`" in str((data.get("error") or {}).get("message"))
    if not refused and (data.get("data_parallel") or data.get("ok") and data.get("n_gpu", 0) > 1):
        v = data.get("versions") or {}
        f.append(
            Finding(
                "PRB002",
                Severity.ERROR,
                f"rank {rank} ran with n_gpu={data.get('n_gpu')} and the model wrapped in "
                f"{data.get('wrapper')}: transformers' Trainer put replicas on every "
                f"visible GPU (TRL {v.get('trl', '?')} with transformers "
                f"{v.get('transformers', '?')} lets this happen silently; newer TRL "
                "refuses it at init)",
                "launch with torchrun --nproc_per_node N or set CUDA_VISIBLE_DEVICES to the training GPUs",
                {"rank": rank, "n_gpu": data.get("n_gpu"), "wrapper": data.get("wrapper"), "versions": v},
            )
        )
    if not data.get("ok"):
        return
    device = data.get("expected_device") or data.get("device", "")
    bad = {
        k: v
        for k in ("param_devices", "grad_devices", "optimizer_state_devices")
        if (v := data.get(k)) and v != [device]
    }
    if data.get("expected_device") and data.get("device") != device:
        bad["trainer_device"] = [data.get("device")]
    if bad:
        f.append(
            Finding(
                "PRB004",
                Severity.ERROR,
                f"rank {rank} has tensors off its device {device}: {bad}",
                "make each rank see only its GPU (CUDA_VISIBLE_DEVICES / torchrun)",
                {"rank": rank, **bad},
            )
        )
    gpu = spec.rank_gpus.get(rank)
    want = spec.gpu_uuids.get(gpu) if gpu is not None else None
    if want and data.get("uuid") and data["uuid"] != want:
        f.append(
            Finding(
                "PRB004",
                Severity.ERROR,
                f"rank {rank} trained on {data['uuid']}, not on GPU "
                f"{spec.rank_gpus[rank]} ({want}) as planned",
                "check CUDA_VISIBLE_DEVICES / --gpu_ids and CUDA_DEVICE_ORDER",
                {"rank": rank},
            )
        )
    if data.get("loss_finite") is False:
        f.append(
            Finding(
                "PRB005",
                Severity.ERROR,
                f"rank {rank}'s loss is not finite ({data.get('loss')})",
                "check bf16/fp16 support of the GPU",
                {"rank": rank},
            )
        )


def judge_isolation(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    if watch is None or watch.error is not None:
        reason = watch.error if watch is not None else "the probe did not start"
        result.isolation = "not measurable"
        result.isolation_detail = f"isolation not measurable: {reason}"
        result.findings.append(
            Finding(
                "PRB008",
                Severity.INFO,
                result.isolation_detail,
                "run the probe on the GPU node to prove isolation",
                {"reason": reason},
            )
        )
        return
    if not spec.rank_gpus or all(g is None for g in spec.rank_gpus.values()):
        for (_pid, gpu), sample in watch.seen.items():
            result.peak_mib[gpu] = max(result.peak_mib.get(gpu, 0), sample.max_mib)
        result.isolation = "not measurable"
        result.isolation_detail = "isolation not judged: the plan names no GPU per rank"
        result.findings.append(
            Finding(
                "PRB008",
                Severity.INFO,
                result.isolation_detail,
                "give the launch command so the layout is known",
                {"reason": "no planned GPUs"},
            )
        )
        return
    pid_rank = {d.get("pid"): r for r, d in result.ranks.items()}
    violations = []
    for (pid, gpu), sample in sorted(watch.seen.items()):
        result.peak_mib[gpu] = max(result.peak_mib.get(gpu, 0), sample.max_mib)
        rank = pid_rank.get(pid)
        own = spec.rank_gpus.get(rank) if rank is not None else None
        if gpu == own:
            continue
        if gpu in spec.generation_gpus:
            role, where = "generation", "reserved for vLLM"
        elif gpu in spec.rank_gpus.values():
            role, where = "other rank's", "of another rank"
        else:
            role, where = "idle", "not in the plan"
        who = f"rank {rank}" if rank is not None else "a launcher process"
        violations.append(f"{who}, pid {pid}, held {gib(sample.max_mib)} on GPU {gpu} {where}")
        result.isolation_offenders.append(
            {"rank": rank, "pid": pid, "gpu": gpu, "mib": sample.max_mib, "role": role}
        )
    if violations:
        result.isolation = "violated"
        result.isolation_detail = "; ".join(violations)
        result.findings.append(
            Finding(
                "PRB003",
                Severity.ERROR,
                "isolation violated: " + result.isolation_detail,
                "make each training process see only its own GPU: torchrun --nproc_per_node N (or "
                "accelerate with --num_processes N --gpu_ids …), or CUDA_VISIBLE_DEVICES",
                {"samples": watch.samples, "offenders": result.isolation_offenders},
            )
        )
    elif not result.ranks or any(d.get("step_s") is None for d in result.ranks.values()):
        result.isolation = "not proved"
        result.isolation_detail = (
            f"no probe process left its GPU while it ran ({watch.samples} "
            "NVML samples), but not every rank finished a GRPO step"
        )
    else:
        result.isolation = "proved"
        trained = set(spec.rank_gpus.values())
        untouched = [g for g in spec.generation_gpus if g not in trained]
        who = "no training process" if spec.use_vllm else "no probe process"
        result.isolation_detail = (
            f"{who} touched GPU {', '.join(map(str, untouched))}"
            if untouched
            else "each rank stayed on its own GPU"
        ) + f" ({watch.samples} NVML samples)"
