"""Watch the generation GPUs while training runs: a training process appearing there, or free
memory falling toward OOM (the slow growth that ends in a crash hours in), is logged as a warning
once per condition, before the crash. Reads NVML only; ``nvml`` is injectable for tests.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

from envdoctor.facts.gpus import load_nvml, process_memory
from envdoctor.units import MiB

log = logging.getLogger("envdoctor")


def slope(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of ``(step, free MiB)`` points, in MiB per step."""
    n = len(points)
    mx = sum(s for s, _ in points) / n
    my = sum(f for _, f in points) / n
    var = sum((s - mx) ** 2 for s, _ in points)
    return sum((s - mx) * (f - my) for s, f in points) / var if var else 0.0


class GpuMonitor:
    """Samples the generation GPUs on demand (``sample(step)``); warns once per condition.

    ``job_pids`` maps a pid of the job to who it is ("rank 1"); ``allowed_pids`` may use the
    generation GPUs (legacy TRL runs vLLM inside rank 0); ``check_pids`` is off in colocate mode,
    where generation shares the training GPUs by design.
    """

    def __init__(
        self,
        generation_gpus: Iterable[int],
        job_pids: dict[int, str] | None = None,
        allowed_pids: Iterable[int] = (),
        check_pids: bool = True,
        check_memory: bool = True,
        min_free_mib: int = 1024,
        horizon_steps: int = 1000,
        history: int = 6,
        nvml: Any = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.gpus = sorted(set(generation_gpus))
        self.job_pids = dict(job_pids or {})
        self.allowed = set(allowed_pids)
        self.check_pids = check_pids
        self.check_memory = check_memory
        self.min_free_mib = min_free_mib
        self.horizon_steps = horizon_steps
        self.history: dict[int, deque[tuple[int, int]]] = {
            g: deque(maxlen=max(history, 3)) for g in self.gpus
        }
        self.nvml = nvml
        self.log = logger or log
        self.error: str | None = None
        self.warned: set[tuple[Any, ...]] = set()
        self._handles: dict[int, Any] = {}

    def start(self) -> bool:
        """Open NVML; False (and ``error`` set) when there is nothing to watch or no NVML."""
        if not self.gpus:
            self.error = "no generation GPU to watch"
            return False
        if self.nvml is None:
            self.nvml, self.error = load_nvml()
            if self.nvml is None:
                return False
        else:
            try:
                self.nvml.nvmlInit()
            except Exception as exc:
                self.error = f"NVML could not start ({exc})"
                return False
        for gpu in self.gpus:
            try:
                self._handles[gpu] = self.nvml.nvmlDeviceGetHandleByIndex(gpu)
            except Exception as exc:
                self.log.debug("envdoctor: cannot watch GPU %s: %s", gpu, exc)
        return bool(self._handles)

    def _warn(self, key: tuple[Any, ...], message: str) -> str | None:
        if key in self.warned:
            return None
        self.warned.add(key)
        self.log.warning("%s", message)
        return message

    def _pids_on(self, handle: Any) -> dict[int, int | None]:
        return process_memory(self.nvml, handle)

    def sample(self, step: int) -> list[str]:
        """Read every generation GPU once; return the warnings this sample raised."""
        said: list[str] = []
        for gpu, handle in self._handles.items():
            if self.check_pids:
                for pid, mib in self._pids_on(handle).items():
                    if pid in self.job_pids and pid not in self.allowed:
                        held = f", holding {mib} MiB" if mib is not None else ""
                        said.append(
                            self._warn(
                                ("pid", pid, gpu),
                                (
                                    f"envdoctor RUN005: training process pid {pid} ({self.job_pids[pid]}) "
                                    f"appeared on generation GPU {gpu} at step {step}{held}: it competes "
                                    "with vLLM for that GPU's memory and ends in CUDA out of memory. Fix: "
                                    "make only the training GPUs visible to the trainer (CUDA_VISIBLE_"
                                    "DEVICES / --gpu_ids) and create no CUDA tensor on another device "
                                    "(envdoctor explain RUN005)"
                                ),
                            )
                            or ""
                        )
            if self.check_memory:
                said += self._memory(gpu, handle, step)
        return [s for s in said if s]

    def _memory(self, gpu: int, handle: Any, step: int) -> list[str]:
        try:
            info = self.nvml.nvmlDeviceGetMemoryInfo(handle)
            free = int(info.free // MiB)
        except Exception:
            return []
        hist = self.history[gpu]
        hist.append((step, free))
        out = []
        if free < self.min_free_mib:
            out.append(
                self._warn(
                    ("low", gpu),
                    (
                        f"envdoctor RUN006: generation GPU {gpu} has {free} MiB free at step {step} "
                        f"(below {self.min_free_mib} MiB): vLLM's next allocation there can fail with CUDA "
                        "out of memory (envdoctor explain RUN006)"
                    ),
                )
            )
        elif len(hist) >= 3:
            rate = slope(list(hist))
            first, last = hist[0], hist[-1]
            drop = first[1] - last[1]
            if rate < 0 and drop >= 256 and last[1] < first[1]:
                reach = last[0] + (last[1] - self.min_free_mib) / -rate
                if reach - step <= self.horizon_steps:
                    out.append(
                        self._warn(
                            ("trend", gpu),
                            (
                                f"envdoctor RUN006: free memory on generation GPU {gpu} fell from "
                                f"{first[1]} to {last[1]} MiB over steps {first[0]}–{last[0]} "
                                f"(≈{-rate:.1f} MiB/step): at this rate it drops below "
                                f"{self.min_free_mib} MiB around step {int(reach)} and training crashes "
                                "with CUDA out of memory (envdoctor explain RUN006)"
                            ),
                        )
                    )
        return [m for m in out if m]

    def close(self) -> None:
        if self._handles and self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
        self._handles = {}
