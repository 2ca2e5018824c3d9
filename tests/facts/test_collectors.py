"""Each collector on this machine's real data (no GPU here: the no-GPU path)."""

from __future__ import annotations

import types

from envdoctor.facts.collect import collect_facts
from envdoctor.facts.environment import MASK, collect_env
from envdoctor.facts.gpus import collect_gpus
from envdoctor.facts.packages import collect_packages, requirement_name


def test_packages_read_real_metadata():
    pkgs = collect_packages()
    assert "click" not in pkgs or pkgs["click"].version  # only the stack and its requirements
    assert pkgs["packaging"].version  # required by transformers/accelerate, so collected
    if "trl" in pkgs:
        assert any(r.startswith("transformers") for r in pkgs["trl"].requires)
        assert pkgs["trl"].version.count(".") >= 1


def test_requirement_name_normalizes():
    assert requirement_name("Torch_Vision>=0.1; extra == 'x'") == "torch-vision"
    assert requirement_name("  ") is None


def test_env_collects_relevant_and_masks_secrets():
    env = collect_env(
        {
            "CUDA_VISIBLE_DEVICES": "0,1",
            "HF_TOKEN": "hf_abc",
            "HOME": "/root",
            "NCCL_DEBUG": "INFO",
            "WANDB_API_KEY": "k",
            "VLLM_API_KEY": "x",
        }
    )
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["HF_TOKEN"] == MASK and env["VLLM_API_KEY"] == MASK
    assert "HOME" not in env and "WANDB_API_KEY" not in env


def test_no_nvml_on_this_machine_is_a_fact_not_a_crash():
    facts = collect_gpus()
    assert facts.gpus == [] or facts.error is None
    if not facts.gpus:
        assert facts.error  # the reason is recorded


class FakeNvml:
    """A stand-in for pynvml with one healthy GPU and one that is lost mid-collection."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return b"550.54.15"

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 12040

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        if i == 1:
            raise self.NVMLError("GPU is lost")
        return i

    def nvmlDeviceGetUUID(self, h):
        return "GPU-1234"

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetMemoryInfo(self, h):
        mib = 1024 * 1024
        return types.SimpleNamespace(total=40960 * mib, used=512 * mib, free=40448 * mib)

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (8, 0)

    def nvmlDeviceGetPciInfo(self, h):
        return types.SimpleNamespace(busId=b"0000:07:00.0")

    def nvmlDeviceGetMigMode(self, h):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=999999, usedGpuMemory=None)]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return []

    def nvmlSystemGetProcessName(self, pid):
        raise self.NVMLError("Not Found")


def test_gpu_collector_survives_a_lost_gpu_and_unnamed_processes():
    facts = collect_gpus(FakeNvml())
    assert facts.driver.version == "550.54.15" and facts.driver.cuda == "12.4"
    assert [g.index for g in facts.gpus] == [0]
    g = facts.gpus[0]
    assert (g.memory_total_mib, g.memory_free_mib, g.compute_capability) == (40960, 40448, "8.0")
    assert g.mig is False and g.processes[0].pid == 999999 and g.processes[0].used_mib is None
    assert "GPU 1" in facts.error


def test_nvml_init_failure_is_recorded():
    class Broken(FakeNvml):
        def nvmlInit(self):
            raise self.NVMLError("Driver Not Loaded")

    facts = collect_gpus(Broken())
    assert facts.gpus == [] and "Driver Not Loaded" in facts.error


def test_collect_facts_whole():
    facts = collect_facts()
    assert facts.python.count(".") == 2 and facts.live and facts.platform
