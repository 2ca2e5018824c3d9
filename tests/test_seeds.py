"""The five field reports of docs/field-reports.md, each as a real `envdoctor check` on a
snapshot: the failure is found with its fix, and the corrected setup passes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import A100_40, LEGACY, MODERN, RTX3090, run_cli, snapshot

LEG_CFG = {
    "use_vllm": True,
    "vllm_device": "auto",
    "num_generations": 4,
    "per_device_train_batch_size": 4,
    "bf16": True,
}


def check(tmp_path, snap, config, *launch, extra=()):
    (tmp_path / "facts.json").write_text(json.dumps(snap))
    (tmp_path / "grpo.yaml").write_text(json.dumps(config))  # JSON is valid YAML
    args = [
        "check",
        "--facts",
        str(tmp_path / "facts.json"),
        "--config",
        str(tmp_path / "grpo.yaml"),
        "--format",
        "json",
        *extra,
    ]
    if launch:
        args += ["--", *launch]
    proc = run_cli(*args)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    return proc.returncode, {f["rule"]: f for f in report["findings"]}


@pytest.mark.parametrize(
    "launch", [["python", "train.py"], ["accelerate", "launch", "--num_processes", "1", "train.py"]]
)
def test_seed_000_001_dataparallel_trap_legacy(tmp_path, launch):
    """2×A100 40GB, GPU 0 trains, GPU 1 runs vLLM; one process sees both → DataParallel."""
    snap = snapshot(2, A100_40, LEGACY)
    rc, found = check(tmp_path, snap, {**LEG_CFG, "vllm_device": "cuda:1"}, *launch)
    assert rc == 1 and "LAY003" in found
    f = found["LAY003"]
    assert "silently" in f["message"] and "GPU 1 reserved for vLLM" in f["message"]
    assert f["fix"].startswith("torchrun --nproc_per_node 1 train.py")


def test_seed_000_001_corrected(tmp_path):
    snap = snapshot(2, A100_40, LEGACY)
    rc, found = check(
        tmp_path, snap, {**LEG_CFG, "vllm_device": "cuda:1"}, "torchrun", "--nproc_per_node", "1", "train.py"
    )
    assert rc == 0, found
    assert not {"LAY003", "LAY006", "LAY001"} & set(found)


def test_dataparallel_trap_modern_trl_refuses(tmp_path):
    snap = snapshot(2, A100_40, MODERN)
    rc, found = check(tmp_path, snap, {"use_vllm": True, "vllm_mode": "server"}, "python", "train.py")
    assert rc == 1 and "refuses a model object the script builds at init" in found["LAY003"]["message"]
    assert found["LAY003"]["fix"].startswith("torchrun --nproc_per_node 2 train.py")


def test_seed_002_vllm_device_not_available(tmp_path):
    """accelerate --num_processes 4 with only 4 GPUs visible: auto = cuda:4 does not exist."""
    snap = snapshot(8, A100_40, LEGACY, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    rc, found = check(
        tmp_path,
        snap,
        LEG_CFG,
        "accelerate",
        "launch",
        "--num_processes",
        "4",
        "train_grpo.py",
        "--vllm_device",
        "auto",
    )
    assert rc == 1 and "LAY002" in found
    assert "cuda:4" in found["LAY002"]["message"]
    assert "--num_processes 3" in found["LAY002"]["fix"]


def test_seed_002_corrected_command_passes(tmp_path):
    """The report's working command: 4 ranks on 0,2,3,4 and vLLM on GPU 5."""
    snap = snapshot(8, A100_40, LEGACY)
    rc, found = check(
        tmp_path,
        snap,
        LEG_CFG,
        "accelerate",
        "launch",
        "--num_processes",
        "4",
        "--gpu_ids",
        "0,2,3,4,5",
        "train_grpo.py",
        "--vllm_device",
        "auto",
    )
    assert rc == 0, found
    proc = run_cli(
        "check",
        "--facts",
        str(tmp_path / "facts.json"),
        "--config",
        str(tmp_path / "grpo.yaml"),
        "--",
        "accelerate",
        "launch",
        "--num_processes",
        "4",
        "--gpu_ids",
        "0,2,3,4,5",
        "train_grpo.py",
    )
    assert "rank 3→GPU 4; vLLM (legacy) on GPU 5" in proc.stdout


def test_seed_002_old_vllm_multi_gpu(tmp_path):
    snap = snapshot(8, A100_40, {**LEGACY, "vllm": "0.7.2"})
    rc, found = check(
        tmp_path,
        snap,
        LEG_CFG,
        "accelerate",
        "launch",
        "--num_processes",
        "4",
        "--gpu_ids",
        "0,2,3,4,5",
        "train_grpo.py",
    )
    # The report's "0.7.3 or newer" is advice (TRL 0.15.2 pins vllm==0.7.2): an info, exit 0.
    assert rc == 0 and found["PKG003"]["severity"] == "info" and "0.7.3" in found["PKG003"]["fix"]


def test_seed_003_vllm_too_old(tmp_path):
    # the report names no vLLM release; 0.7.0 is one before the device fix (huggingface/trl#2766)
    snap = snapshot(2, A100_40, {**LEGACY, "vllm": "0.7.0"})
    rc, found = check(tmp_path, snap, LEG_CFG, "torchrun", "--nproc_per_node", "1", "train.py")
    assert rc == 1 and "PKG002" in found
    assert "Expected all tensors to be on the same device" in found["PKG002"]["message"]


def test_seed_003_on_vllm_0_7_1_is_advice(tmp_path):
    """vLLM 0.7.1 holds the device fix TRL 0.15.0 asks for, and open-r1 ran its GRPO recipes on
    it: the report's upgrade to 0.7.2 is advice (PKG003, info), not an error."""
    snap = snapshot(2, A100_40, {**LEGACY, "trl": "0.15.0", "vllm": "0.7.1"})
    rc, found = check(tmp_path, snap, LEG_CFG, "torchrun", "--nproc_per_node", "1", "train.py")
    assert "PKG002" not in found and found["PKG003"]["severity"] == "info"
    assert "0.7.2" in found["PKG003"]["fix"]


def test_seed_003_corrected(tmp_path):
    snap = snapshot(2, A100_40, {**LEGACY, "vllm": "0.7.2"})
    rc, found = check(tmp_path, snap, LEG_CFG, "torchrun", "--nproc_per_node", "1", "train.py")
    assert "PKG002" not in found and "PKG003" not in found


def test_seed_004_kv_cache_memory(tmp_path):
    """4×RTX 3090 24 GB, vLLM on GPU 3 with 698 MiB free: KV-cache allocation fails."""
    busy = {3: [{"pid": 5150, "name": "python old_run.py", "used_mib": 23878}]}
    snap = snapshot(4, RTX3090, LEGACY, used={3: 23878}, processes=busy)
    rc, found = check(
        tmp_path,
        snap,
        {**LEG_CFG, "vllm_gpu_memory_utilization": 0.7},
        "accelerate",
        "launch",
        "--num_processes",
        "3",
        "train.py",
        extra=["-v"],
    )
    assert rc == 1 and "MEM001" in found
    msg = found["MEM001"]["message"]
    assert "698 MiB free" in msg and "pid 5150" in msg
    assert "ALC003" in found and "expandable_segments:True" in found["ALC003"]["fix"]


def test_seed_004_corrected(tmp_path):
    snap = snapshot(4, RTX3090, LEGACY)
    rc, found = check(
        tmp_path,
        snap,
        {**LEG_CFG, "vllm_gpu_memory_utilization": 0.7},
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "accelerate",
        "launch",
        "--num_processes",
        "3",
        "train.py",
    )
    assert rc == 0 and not [f for f in found.values() if f["severity"] == "error"], found


def test_vllm_before_the_device_fix_is_judged_by_the_trl_era():
    """Below vLLM 0.7.1: with TRL's in-process vLLM (< 0.16) the device fix; with a server-era TRL,
    an error only outside that TRL's own vLLM range (TRL 0.16 takes vllm>=0.7.0), and said so."""
    from tests.conftest import MODERN, findings

    cfg = {"use_vllm": True, "vllm_mode": "server"}
    inside = {**MODERN, "trl": "0.16.0", "vllm": "0.7.0", "torch": "2.5.1", "transformers": "4.50.0"}
    assert not [f for f in findings(snapshot(2, packages=inside), config=cfg) if f.rule == "PKG002"]
    outside = {**MODERN, "trl": "0.25.1", "vllm": "0.5.4.post1", "torch": "2.3.1", "transformers": "4.57.1"}
    (f,) = [f for f in findings(snapshot(2, packages=outside), config=cfg) if f.rule == "PKG002"]
    assert f.severity.value == "error" and "outside TRL 0.25.1's vLLM range" in f.message
    assert "device fix" in next(
        g.message
        for g in findings(snapshot(2, packages={**LEGACY, "vllm": "0.7.0"}), config=LEG_CFG)
        if g.rule == "PKG002"
    )
