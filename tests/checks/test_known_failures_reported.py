"""Issue 36 item 7: the catalogue entries for failures users report now fire where the config or the
launch shows them, and stay quiet on the defaults (TRL's own top_p / top_k / min_p, no PET_* variables)."""

from __future__ import annotations

import pytest

from envdoctor.knowledge import known_failures
from tests.conftest import MODERN, findings, snapshot


def _ids(
    packages: dict[str, str], config: dict | None, launch: str | None = None, env: dict | None = None
) -> set:
    snap = snapshot(packages={**MODERN, **packages}, env=env or {})
    return {f.evidence.get("id") for f in findings(snap, config=config, launch=launch) if f.rule == "KNF001"}


TRUNCATING = [
    ({"top_p": 0.9}, "trl-is-correction-truncated-sampling-top-p"),
    ({"top_k": 20}, "trl-is-correction-truncated-sampling-top-k"),
    ({"min_p": 0.05}, "trl-is-correction-truncated-sampling-min-p"),
]


@pytest.mark.parametrize(("knob", "fid"), TRUNCATING)
def test_truncating_sampler_with_the_is_correction_warns(knob: dict, fid: str) -> None:
    config = {"use_vllm": True, "vllm_mode": "colocate", **knob}
    assert fid in _ids({"trl": "1.16.0", "vllm": "0.31.0"}, config)
    # TRL 0.25's colocated vLLM already returned processed logprobs: the colocate entry
    assert f"{fid}-colocate" in _ids({"trl": "0.25.0", "vllm": "0.11.0"}, config)
    # the IS correction off, or before TRL had it (0.23.0) / processed logprobs (0.24.0): quiet
    assert fid not in _ids(
        {"trl": "1.16.0", "vllm": "0.31.0"}, {**config, "vllm_importance_sampling_correction": False}
    )
    assert not {fid, f"{fid}-colocate"} & _ids({"trl": "0.22.2", "vllm": "0.10.1"}, config)


def test_default_sampling_stays_quiet() -> None:
    for config in (
        {"use_vllm": True},
        {"use_vllm": True, "top_p": 1.0, "top_k": 0, "min_p": 0.0},
        {"use_vllm": True, "top_k": -1},
        {"use_vllm": False, "top_p": 0.9},
    ):
        ids = _ids({"trl": "1.16.0", "vllm": "0.31.0"}, config)
        assert not {i for i in ids if i and i.startswith("trl-is-correction")}, config


def test_sequence_level_sum_is_triage_only_and_reads_the_metric() -> None:
    entry = next(f for f in known_failures() if f.id == "trl-is-correction-sequence-level-sum")
    assert entry.triage_only
    assert any(
        s.found_in("{'loss': 0.01, 'sampling/importance_sampling_ratio/mean': 0.0596}")
        for s in entry.symptoms
    )
    assert not any(s.found_in("{'sampling/importance_sampling_ratio/mean': 0.9931}") for s in entry.symptoms)


def test_weight_update_while_asleep_reads_the_segfault() -> None:
    entry = next(f for f in known_failures() if f.id == "vllm-weight-update-while-asleep-segfault")
    log = (
        'INFO: 127.0.0.1 - "POST /sleep?level=1 HTTP/1.1" 200 OK\n'
        'INFO: 127.0.0.1 - "POST /start_weight_update HTTP/1.1" 200 OK\n'
        "(APIServer) INFO POST /update_weights\n"
        "!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "<unknown>", line 0, in cuMemcpyDtoDAsync_v2\n'
    )
    assert entry.triage_only and any(s.found_in(log) for s in entry.symptoms)
    assert not any(
        s.found_in("!!!!!!! Segfault encountered !!!!!!!\n in at::native::mm\n") for s in entry.symptoms
    )


KUBEFLOW = "kubeflow-accelerate-launch-ignores-pet-world-size-1"


def test_accelerate_launch_under_kubeflow_pet_variables_warns() -> None:
    env = {"PET_NNODES": "2", "PET_NPROC_PER_NODE": "8", "PET_NODE_RANK": "0"}
    grpo = {"use_vllm": False}
    assert KUBEFLOW in _ids({}, grpo, "accelerate launch train.py", env)
    assert KUBEFLOW in _ids({}, grpo, "trl grpo --output_dir out", env)
    # torchrun reads PET_* itself; no PET_* at all: not a Kubeflow pod
    assert KUBEFLOW not in _ids({}, grpo, "torchrun train.py", env)
    assert KUBEFLOW not in _ids({}, grpo, "accelerate launch train.py", {})


# -- the API breaks scripts/refresh_knowledge.py derived from the wheels (trl_vllm_api_derived.yaml) ------

DERIVED = [
    # TRL 0.14-0.15 build LLM(device=...); EngineArgs has no `device` from vLLM 0.10.0
    ("trl-vllm-api-device-trl-0-14-0-0-16-0-vllm-0-10-0", "0.15.2", "0.10.0", "0.9.2"),
    # TRL 0.16's `trl vllm-serve` imports vllm.worker.worker, gone from vLLM 0.11.0
    ("trl-vllm-api-vllm-worker-worker-trl-0-16-0-0-17-0-vllm-0-11-0", "0.16.1", "0.11.0", "0.10.2"),
]


@pytest.mark.parametrize(("fid", "trl", "broken", "works"), DERIVED, ids=[d[0] for d in DERIVED])
def test_api_break_inside_the_declared_range_is_an_error(fid: str, trl: str, broken: str, works: str) -> None:
    snap = snapshot(packages={**MODERN, "trl": trl, "vllm": broken})
    found = [f for f in findings(snap, config={"use_vllm": True}) if f.rule == "KNF001"]
    hit = [f for f in found if f.evidence.get("id") == fid]
    assert hit and hit[0].severity == "error"
    # TRL's declared range admits this vLLM, so PKG006 alone would have said nothing
    assert "PKG006" not in {f.rule for f in findings(snap, config={"use_vllm": True})}
    assert fid not in _ids({"trl": trl, "vllm": works}, {"use_vllm": True})
