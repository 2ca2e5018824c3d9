"""LoPT: Localized Post-Training utilities."""

from .modeling_lopt import LoPTModelForCausalLM, build_lopt_optimizer_groups

__all__ = ["LoPTModelForCausalLM", "build_lopt_optimizer_groups"]
