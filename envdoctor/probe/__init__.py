"""The live probe: a tiny real GRPO step on the target GPUs (imports torch only in the worker)."""

from envdoctor.probe.run.runner import ProbeResult, ProbeSpec, run_probe

__all__ = ["ProbeResult", "ProbeSpec", "run_probe"]
