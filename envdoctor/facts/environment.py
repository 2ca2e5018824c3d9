"""Environment variables that decide where and how training runs, secrets masked."""

from __future__ import annotations

import os
from collections.abc import Mapping

from envdoctor.redact import MASK, is_secret, redact

__all__ = ["EXACT", "MASK", "PREFIXES", "collect_env", "is_secret", "mask"]

EXACT = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "CUDA_HOME",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "TOKENIZERS_PARALLELISM",
)
PREFIXES = ("NCCL_", "VLLM_", "ACCELERATE_", "HF_", "TORCH_", "TORCHELASTIC_", "TRL_")


def mask(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-named variables replaced by ``****`` and
    every other value redacted (URL user information, secret query parameters, tokens)."""
    return {k: (MASK if is_secret(k) and v else redact(v)) for k, v in env.items()}


def collect_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The relevant variables of ``environ`` (default: this process), masked."""
    environ = os.environ if environ is None else environ
    picked = {k: v for k, v in environ.items() if k in EXACT or k.startswith(PREFIXES)}
    return mask(dict(sorted(picked.items())))
