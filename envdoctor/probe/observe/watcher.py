"""Samples NVML during the probe (~20 Hz): which process holds how much memory on which GPU."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from envdoctor.facts.gpus import load_nvml, process_memory, process_name
from envdoctor.units import MiB


@dataclass
class Sample:
    pid: int
    gpu: int
    max_mib: int
    first_s: float


@dataclass
class GpuWatch:
    """Per (pid, NVML index) the most memory seen, for the processes of one process group.

    Without NVML (no driver, no ``pynvml``) ``start`` leaves ``error`` set to the reason and
    samples nothing: isolation is then "not measurable: <error>".
    """

    pgid: int
    interval_s: float = 0.05
    nvml: Any = None
    error: str | None = None
    seen: dict[tuple[int, int], Sample] = field(default_factory=dict)
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _t0: float = 0.0

    def start(self) -> GpuWatch:
        injected = self.nvml is not None
        if not injected:
            self.nvml, self.error = load_nvml()  # initialised on success
            if self.nvml is None:
                return self
        try:
            if injected:
                self.nvml.nvmlInit()
            self._handles = [
                self.nvml.nvmlDeviceGetHandleByIndex(i) for i in range(self.nvml.nvmlDeviceGetCount())
            ]
        except Exception as exc:
            self.error = f"NVML could not start ({exc})"
            return self
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="envdoctor-gpu-watch", daemon=True)
        self._thread.start()
        return self

    def _mine(self, pid: int) -> bool:
        try:
            return os.getpgid(pid) == self.pgid
        except (ProcessLookupError, PermissionError):
            return False

    def _processes(self) -> list[tuple[int, int, int]]:
        """(pid, gpu, MiB) for every process NVML lists on any GPU now."""
        found = []
        for index, handle in enumerate(getattr(self, "_handles", [])):
            for pid, mib in process_memory(self.nvml, handle).items():
                found.append((pid, index, mib or 0))
        return found

    def sample_once(self) -> list[tuple[int, int, int]]:
        """(pid, gpu, MiB) for every process of the group now on a GPU."""
        return [s for s in self._processes() if self._mine(s[0])]

    def holding(self, pids: set[int]) -> list[tuple[int, int, int]]:
        """(pid, gpu, MiB) for those of ``pids`` that still hold GPU memory (after the probe)."""
        if self.error is not None or self.nvml is None:
            return []
        return [s for s in self._processes() if s[0] in pids]

    def memory(self) -> dict[int, tuple[int, int]]:
        """NVML index → (free MiB, total MiB) now (empty when not measurable)."""
        out = {}
        for index, handle in enumerate(getattr(self, "_handles", [])):
            try:
                info = self.nvml.nvmlDeviceGetMemoryInfo(handle)
                out[index] = (int(info.free // MiB), int(info.total // MiB))
            except Exception:
                continue
        return out

    def others(self, pgids: set[int]) -> dict[int, list[tuple[int, str, int]]]:
        """NVML index → (pid, short name, MiB) of the processes outside ``pgids`` on it."""
        out: dict[int, list[tuple[int, str, int]]] = {}
        for pid, gpu, mib in self._processes():
            try:
                if os.getpgid(pid) in pgids:
                    continue
            except (ProcessLookupError, PermissionError):
                pass
            words = process_name(pid, self.nvml).split(" ")
            if "-c" in words[1:2]:
                name = f"{words[0]} -c …"  # inline code: not a name
            else:  # program and script, no flag values
                name = " ".join([w for w in words if w and not w.startswith("-") and "=" not in w][:2])
            name = name[:60]
            out.setdefault(gpu, []).append((pid, name, mib))
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic() - self._t0
            for pid, gpu, mib in self.sample_once():
                old = self.seen.get((pid, gpu))
                if old is None:
                    self.seen[(pid, gpu)] = Sample(pid, gpu, mib, round(now, 3))
                elif mib > old.max_mib:
                    old.max_mib = mib
            self.samples += 1
            self._stop.wait(self.interval_s)

    def stop(self) -> dict[tuple[int, int], Sample]:
        """Stop sampling; returns the peak per (pid, NVML index) (empty when not measurable)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        return dict(self.seen)

    def close(self) -> None:
        self.stop()
        if self.error is None and self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
