"""Cluster checks: ``envdoctor check --distributed`` inside a torchrun / accelerate job, and
``envdoctor diff`` of two snapshots.

Only ``gather``, ``bandwidth`` and ``run`` import torch; ``compare`` and ``report`` are plain data
and also serve ``envdoctor diff``.
"""

from __future__ import annotations

from typing import Any


def run_distributed(**options: Any) -> int:
    """Run the cluster check on this rank; returns the exit code every rank shares.

    Options: ``envdoctor.cluster.run.ClusterOptions`` fields. Imports torch (lazily).
    """
    from envdoctor.cluster.run import ClusterOptions, run

    return run(ClusterOptions(**options))
