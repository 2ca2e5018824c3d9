"""The vLLM engine the probe starts, as the user's run would start it: TRL's settings.

TRL's colocate ``LLM()`` takes ``max_num_seqs`` = per-device batch × tensor parallel size ×
steps per generation, ``max_model_len`` = ``vllm_max_model_length`` (None: vLLM's default, the
model's positions), the memory fraction, sleep mode and model implementation from GRPOConfig
(trl/trainer/grpo_trainer.py at v1.16.0). A server takes its own flags. The probe deviates in
two ways, said in the report: vLLM runs eager, and the generic model caps the context at its
positions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envdoctor.probe.interface import ProbeSpec
    from envdoctor.probe.stage.server import ServerLine

#: the max_model_len key of each in-process mode: the generic model caps it at its positions
MAX_LEN_KEY = {"colocate": "vllm_max_model_length", "legacy": "vllm_max_model_len"}


def _flag(argv: list[str], name: str) -> str | None:
    for i, tok in enumerate(argv):
        for spelled in (f"--{name}", f"--{name.replace('_', '-')}"):
            if tok == spelled and i + 1 < len(argv):
                return argv[i + 1]
            if tok.startswith(spelled + "="):
                return tok.split("=", 1)[1]
    return None


def _num(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def engine_settings(
    spec: ProbeSpec, vllm: dict[str, Any], faithful: bool, server: ServerLine | None = None
) -> dict[str, Any]:
    """The report's ``probe.vllm``: how the probe starts vLLM (before the worker reports what
    TRL really passed, which replaces the planned values)."""
    deviations = ["eager (no torch.compile, no CUDA graphs): the probe's step is one batch"]
    if not faithful:
        deviations.append("the generic model's context (its 2048 positions) bounds max_model_len")
    if server is not None:  # the probe server's line: its sizes as probe_server_line read them
        return {
            "mode": "server",
            "max_model_len": _num(_flag(server.argv, "max_model_len")),
            "max_num_seqs": _num(_flag(server.argv, "max_num_seqs")),
            "tensor_parallel_size": server.tensor_parallel_size,
            "data_parallel_size": server.data_parallel_size,
            "gpu_memory_utilization": server.fraction,
            "sleep_mode": False,
            "eager": True,
            "deviations": deviations,
        }
    tp = _num(vllm.get("vllm_tensor_parallel_size")) or 1
    steps = max(spec.gradient_accumulation_steps, 1)  # TRL's steps_per_generation default
    return {
        "mode": spec.vllm_mode,
        "max_model_len": _num(vllm.get(MAX_LEN_KEY.get(spec.vllm_mode or "", ""))),
        "max_num_seqs": spec.per_device_train_batch_size * tp * steps
        if spec.vllm_mode == "colocate"
        else None,
        "tensor_parallel_size": tp,
        "gpu_memory_utilization": vllm.get("vllm_gpu_memory_utilization"),
        "sleep_mode": bool(vllm.get("vllm_enable_sleep_mode", False)),
        "model_impl": vllm.get("vllm_model_impl"),
        "eager": True,
        "deviations": deviations,
    }
