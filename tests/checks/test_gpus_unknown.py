"""A snapshot whose GPUs are not known (``"gpus": null``, a setup that does not say how many) is
not a machine with no GPU: GPU001 says so as info, and no rule judges a GPU count, model or
memory it was not given (no warning or error from a default the user never stated). Issue 35
(gate13)."""

from __future__ import annotations

import json

from envdoctor.facts.snapshot import from_dict, to_dict
from tests.conftest import run_cli, snapshot

STACK = {"trl": "0.16.0", "vllm": "0.8.3", "torch": "2.6.0", "transformers": "4.51.3"}


def _unknown() -> dict:
    snap = snapshot(0, packages=STACK)
    snap["gpus"] = None
    return snap


def test_null_gpus_read_as_not_known_and_written_back():
    facts = from_dict(_unknown(), "t")
    assert facts.gpus_unknown and facts.gpus == []
    assert to_dict(facts)["gpus"] is None
    assert not from_dict(snapshot(0, packages=STACK), "t").gpus_unknown


def test_an_unknown_gpu_count_gives_no_gpu_warning(write_json, tmp_path):
    facts = str(write_json(_unknown()))
    got = run_cli(
        "check",
        "--facts",
        facts,
        "--format",
        "json",
        "--launch",
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen2.5-0.5B",
        "--",
        "accelerate",
        "launch",
        "train.py",
        cwd=tmp_path,
    )
    data = json.loads(got.stdout)
    bad = [f for f in data["findings"] if f["severity"] in ("warning", "error")]
    assert not bad
    (gpu001,) = [f for f in data["findings"] if f["rule"] == "GPU001"]
    assert gpu001["severity"] == "info" and "not known" in gpu001["message"]


def test_no_gpu_stays_a_warning(write_json, tmp_path):
    facts = str(write_json(snapshot(0, packages=STACK)))
    got = run_cli("check", "--facts", facts, "--format", "json", "--", "python", "train.py", cwd=tmp_path)
    (gpu001,) = [f for f in json.loads(got.stdout)["findings"] if f["rule"] == "GPU001"]
    assert gpu001["severity"] == "warning"
