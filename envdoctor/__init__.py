"""envdoctor: a preflight validator and environment doctor for GRPO training with TRL + vLLM.

Importing this package imports no torch, transformers, trl or vllm.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
