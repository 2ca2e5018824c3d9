"""GPUs, their memory and processes, and the driver, read through NVML (``pynvml``).

No driver, no NVML library or no GPU is recorded as a fact with its reason, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envdoctor.facts.interface import Driver, Gpu, GpuProcess
from envdoctor.redact import mask_argv
from envdoctor.units import MiB


@dataclass
class GpuFacts:
    driver: Driver = field(default_factory=Driver)
    gpus: list[Gpu] = field(default_factory=list)
    error: str | None = None


def process_name(pid: int, nvml: Any = None) -> str:
    """A short command line for ``pid`` ("python trl vllm-serve --model …"), or ``""``."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        parts = [p.decode(errors="replace") for p in raw.split(b"\0") if p]
        if parts:
            parts[0] = parts[0].rsplit("/", 1)[-1]
            return " ".join(mask_argv(parts))[:200]  # a secret's every word, before joining
    except OSError:
        pass
    if nvml is not None:
        try:
            name = nvml.nvmlSystemGetProcessName(pid)
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:
            pass
    return ""


#: How a vLLM server's processes show up in NVML's list: vLLM's engine process renames itself
#: (setproctitle) to ``VLLM::EngineCore`` (``VLLM::Worker…`` with tensor parallelism); the
#: front-end keeps its command line (``vllm serve``, ``trl vllm-serve``, ``-m vllm.entrypoints``).
VLLM_PROCESS_MARKS = ("VLLM::", "vllm serve", "vllm-serve", "vllm_serve", "vllm.entrypoints")


def is_vllm_process(name: str) -> bool:
    """Whether a GPU process's name is one of a vLLM server's processes."""
    return any(mark in name for mark in VLLM_PROCESS_MARKS)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def process_memory(nvml: Any, handle: Any) -> dict[int, int | None]:
    """pid → MiB (None when NVML cannot tell) of every compute/graphics process on one GPU."""
    out: dict[int, int | None] = {}
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            procs = getattr(nvml, getter)(handle)
        except Exception:
            continue
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)
            out.setdefault(int(p.pid), int(used // MiB) if isinstance(used, int) and used >= 0 else None)
    return out


def load_nvml() -> tuple[Any, str | None]:
    """``(pynvml, None)`` initialised, or ``(None, why not)``; a cheap library check first."""
    try:
        import ctypes

        ctypes.CDLL("libnvidia-ml.so.1")
        import pynvml
    except (OSError, ImportError) as exc:
        return None, f"NVML unavailable ({exc})"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML could not start ({exc})"
    return pynvml, None


def _processes(nvml: Any, handle: Any) -> list[GpuProcess]:
    return [
        GpuProcess(pid=pid, name=process_name(pid, nvml), used_mib=mib)
        for pid, mib in process_memory(nvml, handle).items()
    ]


def _one_gpu(nvml: Any, index: int) -> Gpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    gpu = Gpu(index=index)
    gpu.uuid = _text(nvml.nvmlDeviceGetUUID(handle))
    gpu.name = _text(nvml.nvmlDeviceGetName(handle))
    mem = nvml.nvmlDeviceGetMemoryInfo(handle)
    gpu.memory_total_mib = int(mem.total // MiB)
    gpu.memory_used_mib = int(mem.used // MiB)
    gpu.memory_free_mib = int(mem.free // MiB)
    try:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        gpu.compute_capability = f"{major}.{minor}"
    except Exception:
        pass
    try:
        gpu.pci_bus_id = _text(nvml.nvmlDeviceGetPciInfo(handle).busId)
    except Exception:
        pass
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        gpu.mig = bool(current)
    except Exception:
        gpu.mig = False
    if gpu.mig:
        try:
            for i in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                try:
                    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
                    gpu.mig_devices.append(_text(nvml.nvmlDeviceGetUUID(mig)))
                except Exception:
                    continue
        except Exception:
            pass
    gpu.processes = _processes(nvml, handle)
    return gpu


def _cuda_version(raw: int) -> str:
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def collect_gpus(nvml: Any = None) -> GpuFacts:
    """Read every GPU through NVML. ``nvml`` is injectable for tests (default: ``pynvml``)."""
    if nvml is None:
        try:  # a cheap look for the driver's library before importing the bindings
            import ctypes

            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return GpuFacts(
                error="NVML library libnvidia-ml.so.1 not found: no NVIDIA driver installed on this machine"
            )
        try:
            import pynvml as nvml  # type: ignore[no-redef]
        except ImportError:
            return GpuFacts(error="NVML bindings not installed (pip install nvidia-ml-py)")
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return GpuFacts(
            error=f"NVML could not start ({_text(exc) or type(exc).__name__}): "
            "no NVIDIA driver loaded, or no permission to use it"
        )
    facts = GpuFacts()
    try:
        try:
            facts.driver.version = _text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            pass
        try:
            facts.driver.cuda = _cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion_v2()))
        except Exception:
            try:
                facts.driver.cuda = _cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion()))
            except Exception:
                pass
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:
            facts.error = f"NVML could not count GPUs ({_text(exc)})"
            return facts
        lost = []
        for index in range(count):
            try:
                facts.gpus.append(_one_gpu(nvml, index))
            except Exception as exc:
                lost.append(f"GPU {index}: {_text(exc) or type(exc).__name__}")
        if lost:
            facts.error = "some GPUs could not be read: " + "; ".join(lost)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
    return facts
