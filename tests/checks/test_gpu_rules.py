"""GPU rules on snapshots whose GPUs are partly unknown."""

from __future__ import annotations

from tests.conftest import findings, rules_fired, snapshot


def test_gpu005_an_unknown_capability_is_no_other_model():
    """Two H100s, one whose snapshot lost its compute capability: the same model, no warning and
    no crash; a real second model is still named, with its capability unknown."""
    h100 = {"name": "NVIDIA H100", "compute_capability": "9.0", "memory_total_mib": 81559}
    same = snapshot(gpus=[{"index": 0, **h100}, {"index": 1, **h100, "compute_capability": None}])
    assert "GPU005" not in rules_fired(same, launch="torchrun --nproc_per_node 2 train.py")
    other = snapshot(
        gpus=[{"index": 0, **h100}, {"index": 1, **h100, "name": "NVIDIA A100", "compute_capability": None}]
    )
    found = [f for f in findings(other, launch="torchrun --nproc_per_node 2 train.py") if f.rule == "GPU005"]
    assert found and "NVIDIA A100 (cc unknown)" in found[0].message
