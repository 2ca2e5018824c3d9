"""Turn log matches into findings, confirmed (or not) by this machine's facts and layout."""

from __future__ import annotations

from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.triage.oom import explain, parse_oom
from envdoctor.triage.scanner import Match, Scan

_VLLM_HINTS = ("vllm", "kv cache", "KV cache", "EngineCore", "LLMEngine", "gpu_memory_utilization")


def _where(m: Match, scan: Scan) -> str:
    ranks = sorted(scan.ranks.get(m.signature.id, set()))
    count = scan.counts.get(m.signature.id, 1)
    where = f"log line {m.line_no}"
    if ranks:
        where += f", rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
    if count > 1:
        where += f", {count} times"
    return where


def _why(m: Match, ctx: Any) -> tuple[str, str]:
    """Machine-specific confirmation and fix for one signature (empty when nothing to add)."""
    if ctx is None:
        return "", ""
    sig = m.signature.id
    vllm = ctx.version("vllm")
    if sig in ("device-mismatch", "rotary-size-mismatch"):
        if vllm and versions.below(vllm, "0.7.2"):
            return f"confirmed: installed vLLM {vllm} is older than 0.7.2", \
                "pip install 'vllm>=0.7.2'"
        if ctx.layout.process_gpus > 1 and not ctx.layout.problems.get("distributed"):
            return ("here: one training process sees several GPUs (the DataParallel trap)",
                    "launch with torchrun --nproc_per_node N, or set CUDA_VISIBLE_DEVICES")
        return f"vLLM here is {vllm or 'not installed'}", ""
    if sig == "vllm-device-unavailable":
        n = len(ctx.layout.visible)
        if n:
            return (f"here the trainer sees {n} GPU(s), so --num_processes must be at most "
                    f"{n - 1} to leave one for vLLM", f"--num_processes {max(n - 1, 1)}")
    if sig == "vllm-abi-mismatch":
        torch = ctx.version("torch")
        pkg = ctx.facts.packages.get("vllm")
        pins = [r for r in (pkg.requires or []) if r.startswith("torch")] if pkg else []
        if pins:
            return (f"confirmed: vLLM {vllm} requires {pins[0]}, installed torch {torch}",
                    f"pip install '{pins[0].split(';')[0]}'")
    if sig in ("batch-not-divisible", "generation-batch-not-divisible", "num-generations-too-small"):
        return ("the GRPO config decides it (envdoctor check --config … checks it before launch)",
                "")
    if sig in ("alloc-conf-unrecognized", "alloc-conf-unrecognized-key"):
        env = ctx.facts.env
        value = env.get("PYTORCH_CUDA_ALLOC_CONF") or env.get("PYTORCH_ALLOC_CONF")
        if value:
            return f"this shell has PYTORCH_CUDA_ALLOC_CONF={value}", ""
    return "", ""


def _oom_finding(m: Match, scan: Scan, ctx: Any, context_text: str) -> Finding:
    oom = parse_oom(m.text)
    if oom is None:
        return Finding("TRI001", Severity.ERROR, f"CUDA out of memory ({_where(m, scan)}): "
                       f"{m.text[:300]}", "see envdoctor explain TRI001", {"line": m.line_no})
    physical, others, shared = None, [], False
    if ctx is not None and ctx.facts.gpus:
        lay = ctx.layout
        visible = lay.visible
        physical = visible[oom.gpu] if oom.gpu < len(visible) else None
        if physical is not None:
            gpu = ctx.facts.gpu(physical)
            job = set(oom.processes)
            others = [f"pid {p.pid} {p.name.split(' ')[0]} ({p.used_mib} MiB)"
                      for p in (gpu.processes if gpu else []) if p.pid not in job]
            shared = (physical in lay.generation and physical in lay.training
                      and lay.generation_mode != "colocate") or (
                lay.process_gpus > 1 and physical in lay.generation)
    vllm_side = any(h in context_text for h in _VLLM_HINTS)
    cause, message, fix = explain(oom, physical, others, shared, vllm_side)
    return Finding("TRI001", Severity.ERROR, f"{message} ({_where(m, scan)})", fix,
                   {"cause": cause, "gpu": oom.gpu, "want_mib": round(oom.want_mib, 1),
                    "free_mib": round(oom.free_mib, 1), "total_mib": round(oom.total_mib, 1),
                    "unallocated_mib": oom.unallocated_mib, "line": m.line_no})


def diagnose(scan: Scan, ctx: Any = None) -> list[Finding]:
    """One finding per signature found (the first occurrence; counts and ranks in the text)."""
    from envdoctor.checks.docs import rule_docs

    docs = rule_docs()
    seen: set[str] = set()
    findings: list[Finding] = []
    context_text = "\n".join(x.text for x in scan.matches)
    for m in sorted(scan.matches, key=lambda x: x.line_no):
        if m.signature.id in seen:
            continue
        seen.add(m.signature.id)
        if m.signature.id == "cuda-oom":
            findings.append(_oom_finding(m, scan, ctx, context_text))
            continue
        doc = docs.get(m.signature.rule)
        why, fix = _why(m, ctx)
        message = f"{m.signature.summary} ({_where(m, scan)}): {m.text[:300]}"
        if why:
            message += f" — {why}"
        findings.append(Finding(m.signature.rule, Severity.ERROR, message,
                                fix or (doc.fix if doc else ""),
                                {"signature": m.signature.id, "line": m.line_no, **m.groups}))
    return findings
