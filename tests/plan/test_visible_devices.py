"""CUDA_VISIBLE_DEVICES semantics (indices, UUIDs, MIG, empty, -1, duplicates, order)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.facts.interface import Gpu
from envdoctor.plan.visible_devices import cuda_order, resolve_visible

GPUS = [
    Gpu(index=i, uuid=f"GPU-{i}abc-0000", name="H100", compute_capability="9.0", memory_total_mib=81559)
    for i in range(4)
]


def test_unset_is_all():
    assert resolve_visible(None, GPUS).gpus == [0, 1, 2, 3]


def test_indices_and_stop_at_first_invalid():
    v = resolve_visible("2,0,7,1", GPUS)
    assert v.gpus == [2, 0] and v.bad == "7" and v.ignored == ["1"] and "7" in v.problem


def test_duplicates_hide_everything():
    v = resolve_visible("0,1,0", GPUS)
    assert v.gpus == [] and "twice" in v.problem


def test_empty_and_negative():
    assert resolve_visible("", GPUS).gpus == []
    assert resolve_visible("-1", GPUS).gpus == []
    assert resolve_visible("1,-1,2", GPUS).gpus == [1]


def test_uuid_prefixes():
    assert resolve_visible("GPU-2abc,GPU-0", GPUS).gpus == [2, 0]
    mixed = [Gpu(index=0, uuid="GPU-aa1"), Gpu(index=1, uuid="GPU-aa2")]
    assert resolve_visible("GPU-aa", mixed).gpus == []  # ambiguous prefix


def test_mig_ids():
    gpus = [Gpu(index=0, uuid="GPU-a", mig=True, mig_devices=["MIG-1111-2222"])]
    v = resolve_visible("MIG-1111", gpus)
    assert v.gpus == [0] and v.mig == ["MIG-1111"]


def test_fastest_first_differs_from_pci_order_on_mixed_gpus():
    mixed = [
        Gpu(index=0, name="T4", compute_capability="7.5", memory_total_mib=15360),
        Gpu(index=1, name="A100", compute_capability="8.0", memory_total_mib=40960),
    ]
    assert [g.index for g in cuda_order(mixed, None)] == [1, 0]
    assert [g.index for g in cuda_order(mixed, "PCI_BUS_ID")] == [0, 1]
    assert resolve_visible("0", mixed).gpus == [1]
    assert resolve_visible("0", mixed, "PCI_BUS_ID").gpus == [0]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_string_resolves_without_raising(value):
    v = resolve_visible(value, GPUS)
    assert set(v.gpus) <= {0, 1, 2, 3} and len(v.gpus) == len(set(v.gpus))
