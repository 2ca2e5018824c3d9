"""Answers that pointed away from the settled cause (#36): a catalogue symptom that matched a type
name torch's own argument parser prints, not the failure the entry describes."""

from __future__ import annotations

from pathlib import Path

import yaml

from envdoctor.knowledge.failures import KnownFailure, parse_file
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]

_ENTRY = "Server mode of TRL 0.17.0-0.19.0 hangs at the first weight sync"


def _entry(name: str) -> KnownFailure:
    path = ROOT / "rules" / "knowledge" / "known_failures" / "trl_release_bugs.yaml"
    return next(f for f in parse_file(path.name, yaml.safe_load(path.read_text())) if f.id == name)


def _titles(text: str) -> list[str]:
    return [f.message for f in findings(scan_bytes(text.encode()))]


def test_torchs_argument_parser_naming_a_dtype_is_not_vllms_serialization_refusal():
    """torch's overload error lists the argument types it was given (``got (dtype=torch.dtype,
    device=module, )``): no dtype serialization failed (set 23's f008, a verl advantage function
    passing a module as the device). vLLM's msgspec refusal still names the entry."""
    torch_parser = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/verl/trainer/ppo/core_algos.py", line 265, in f\n'
        "    scores = scores.to(dtype=torch.float32, device=device)\n"
        "TypeError: to() received an invalid combination of arguments - got (dtype=torch.dtype, "
        "device=module, ), but expected one of:\n"
    )
    assert not any(_ENTRY in m for m in _titles(torch_parser))
    # the entry's symptoms still name vLLM's refusal, whole or cut (another, more precise entry
    # answers it in triage: vLLM's serializer refusing an RPC argument)
    entry = _entry("trl-server-weight-sync-dtype-vllm-0.9")
    refusal = (
        "TypeError: Object of type <class 'torch.dtype'> is not serializable. Set "
        "VLLM_ALLOW_INSECURE_SERIALIZATION=1 to allow fallback to pickle-based serialization."
    )
    cut = "TypeError: Object of type <class 'torch.dtype'> is not serializable"
    for line in (refusal, cut):
        assert any(s.found_in(line) for s in entry.symptoms)
    assert not any(s.found_in(torch_parser) for s in entry.symptoms)


_CKPT = (
    "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values for the "
    "following tensors have different metadata than during the forward pass.\n"
    "tensor at position 12:\n"
    "saved metadata: {{'shape': torch.Size([16, 4, 448, 1]), 'dtype': torch.float32}}\n"
    "recomputed metadata: {{'shape': torch.Size({shape}), 'dtype': torch.float32}}\n"
)
_PARTITIONED = "Non-reentrant gradient checkpointing recomputes with ZeRO-3"


def test_recomputed_metadata_shown_without_a_partitioned_shape_rules_the_zero3_entry_out():
    """torch prints the recomputed metadata after the CheckpointError: where it shows and no shape
    is ZeRO-3's partitioned [0] (a cuDNN attention recompute of another shape, set 22's f006), the
    entry about partitioned parameters is contradicted, not named (a warning before)."""
    other = _titles(_CKPT.format(shape="[16, 4, 448]"))
    assert not any(_PARTITIONED in m for m in other)
    assert not any("LoRA under ZeRO-3 with gradient checkpointing" in m for m in other)
    # quiet: a recomputed [0] settles the entry (an error), a bare message leaves it likely
    got = findings(scan_bytes(_CKPT.format(shape="[0]").encode()))
    hit = next(f for f in got if _PARTITIONED in f.message)
    assert hit.severity.value == "error"
    bare = _CKPT.split("\n", 1)[0] + "\n"
    assert any(_PARTITIONED in m for m in _titles(bare))


def test_ruled_out_by_is_a_list_of_strings():
    import pytest

    from envdoctor.knowledge.failures import KnownFailuresError, parse_entry

    path = ROOT / "rules" / "knowledge" / "known_failures" / "deepspeed_fsdp.yaml"
    doc = yaml.safe_load(path.read_text())
    entry = next(e for e in doc["failures"] if e["id"] == "sharded-params-non-reentrant-checkpoint-recompute")
    assert parse_entry(entry, "x").ruled_out_by
    with pytest.raises(KnownFailuresError, match="ruled_out_by"):
        parse_entry({**entry, "ruled_out_by": [3]}, "x")
