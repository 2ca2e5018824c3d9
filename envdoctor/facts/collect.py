"""Collect all facts of this machine."""

from __future__ import annotations

import os
import platform
import sys

from envdoctor.facts.environment import collect_env
from envdoctor.facts.gpus import collect_gpus
from envdoctor.facts.interface import Facts
from envdoctor.facts.packages import FEATURES, STACK, collect_packages


def collect_facts(gpus: bool = True) -> Facts:
    """Facts of this machine, read-only; ``gpus=False`` skips NVML (config-only checks)."""
    gpu_facts = collect_gpus() if gpus else None
    facts = Facts(
        python=platform.python_version(),
        platform=f"{platform.system()}-{platform.release()}-{platform.machine()}",
        packages=collect_packages(STACK + FEATURES),
        env=collect_env(),
        hostname=_hostname(),
    )
    facts.extra["executable"] = sys.executable
    if gpu_facts is None:
        facts.nvml_error = "GPU facts not collected (--no-gpu)"
    else:
        facts.driver = gpu_facts.driver
        facts.gpus = gpu_facts.gpus
        facts.nvml_error = gpu_facts.error
    return facts


def _hostname() -> str:
    """This machine's name: ``uname``'s node name where there is one (what ``gethostname``
    returns there, without importing ``socket``: 3 ms), else the socket library's."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()
