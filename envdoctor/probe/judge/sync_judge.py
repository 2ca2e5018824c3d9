"""Judge the weight-sync proof the ranks ran (sync_proof.py): PRB019, or a proof on record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envdoctor.findings import Finding, Severity

if TYPE_CHECKING:
    from envdoctor.probe.interface import ProbeResult, ProbeSpec

_PATHS = {
    "server": "the server path (TRL's client → the vLLM server, weights broadcast over "
    "NCCL on the group port)",
    "colocate": "the colocate path (load_weights into the in-process engine)",
    "legacy": "the legacy vllm_device path (load_weights into TRL's in-process LLM)",
}
_WHY = {
    "stale": "vLLM still generates from the weights it had before the sync: the sync silently did nothing",
    "mismatch": "vLLM generates from neither the trainer's weights nor the ones before: the "
    "sync wrote other tensors (a parameter-name mapping, a skipped merge, a "
    "gather that returned shards)",
}


def summarize(result: ProbeResult) -> dict[str, Any]:
    """The report's ``probe.weight_sync``: rank 0's proof, with every rank's verdict."""
    per_rank = {
        r: d["weight_sync"] for r, d in sorted(result.ranks.items()) if isinstance(d.get("weight_sync"), dict)
    }
    if not per_rank:
        return {"checked": False, "reason": "no rank finished its step"}
    first = next(iter(per_rank.values()))
    out: dict[str, Any] = {k: v for k, v in first.items() if k != "traceback"}
    out["ranks"] = {
        str(r): (w.get("verdict") if w.get("checked") else "not checked") for r, w in per_rank.items()
    }
    bad = [w for w in per_rank.values() if w.get("verdict") in _WHY]
    if bad:
        out.update({k: v for k, v in bad[0].items() if k != "traceback"})
    return out


def judge_sync(spec: ProbeSpec, result: ProbeResult) -> None:
    """Add the weight-sync verdict to ``result``: an error when vLLM does not follow."""
    if not result.ranks:
        return
    ws = result.weight_sync = summarize(result)
    mode = spec.vllm_mode or ""
    path = _PATHS.get(mode, "TRL's vLLM path")
    verdict = ws.get("verdict")
    numbers = (
        f"mean |Δ log-prob| {ws.get('mean_abs_diff_to_trainer')} to the trainer, "
        f"{ws.get('mean_abs_diff_to_weights_before')} to the weights before, after a move "
        f"of {ws.get('move')} over {ws.get('tokens')} tokens"
    )
    if verdict in _WHY:
        result.findings.append(
            Finding(
                "PRB019",
                Severity.ERROR,
                f"after TRL's own weight sync ({ws.get('path')}), {_WHY[verdict]} — {numbers}, "
                f"through {path}; GRPO would train on completions of a policy it is not training "
                "(nothing errors, rewards just do not improve)",
                "upgrade TRL and vLLM to a pair whose weight sync works together (envdoctor explain "
                "PRB019 lists the known breaks); in server mode run `trl vllm-serve` of the trainer's "
                "own TRL release",
                {"weight_sync": ws, "mode": mode},
            )
        )
        if result.status == "pass":
            result.status = "fail"
    elif verdict == "proved":
        result.findings.append(
            Finding(
                "PRB012",
                Severity.INFO,
                f"weight sync proved: after TRL's own sync vLLM generated from the trainer's moved "
                f"weights ({numbers}), through {path}",
                "nothing to do",
                {"weight_sync": ws},
            )
        )
    elif spec.use_vllm and result.status in ("pass", "fail"):
        reason = ws.get("reason") or f"the move was too small to tell ({ws.get('move')})"
        result.findings.append(
            Finding(
                "PRB012",
                Severity.INFO,
                f"weight sync not proved: {reason}",
                "nothing to do",
                {"weight_sync": ws},
            )
        )
