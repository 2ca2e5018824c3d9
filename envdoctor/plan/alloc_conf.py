"""Parse ``PYTORCH_CUDA_ALLOC_CONF`` / ``PYTORCH_ALLOC_CONF`` as torch's allocator does.

Format: comma-separated ``key:value`` pairs; torch raises at the first CUDA allocation on an
unknown key or a bad value. Sources: c10/cuda/CUDAAllocatorConfig.cpp (torch ≤ 2.8) and
c10/core/AllocatorConfig.cpp (torch ≥ 2.9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Longer values are one problem, not parsed (a 2 MB value is not a setting).
MAX_CHARS = 4096
#: torch raises on the first bad option; listing more than a few helps no one.
MAX_PROBLEMS = 10
_BOOL = {"True", "False"}  # exact capitalisation: torch rejects "true" and "yes"
_INT = re.compile(r"^\d+$")
_FLOAT = re.compile(r"^(?:\d+|\d*\.\d+)$")  # no nested quantifier: linear


def _bool(v: str) -> str | None:
    return None if v in _BOOL else "expected True or False (exactly so capitalised)"


def _mb(v: str) -> str | None:
    if not _INT.match(v):
        return "expected a whole number of MiB"
    return None if int(v) >= 20 else "too small, must be >= 20 (MiB)"


def _threshold(v: str) -> str | None:
    if not _FLOAT.match(v):
        return "expected a number between 0 and 1"
    return None if 0.0 < float(v) < 1.0 else "must be between 0 and 1 (exclusive)"


def _roundup(v: str) -> str | None:
    if _INT.match(v):
        n = int(v)
        return None if n == 0 or (n & (n - 1)) == 0 else "must be a power of 2"
    if v.startswith("[") and v.endswith("]"):
        return None
    return "expected a power of 2 or a list like [256:1,>:4]"


def _backend(v: str) -> str | None:
    return None if v in ("native", "cudaMallocAsync") else "expected native or cudaMallocAsync"


def _positive_int(v: str) -> str | None:
    return None if _INT.match(v) and int(v) > 0 else "expected a positive whole number"


#: Known options and their value checks.
OPTIONS = {
    "backend": _backend,
    "max_split_size_mb": _mb,
    "max_non_split_rounding_mb": _mb,
    "garbage_collection_threshold": _threshold,
    "roundup_power2_divisions": _roundup,
    "expandable_segments": _bool,
    "release_lock_on_cudamalloc": _bool,
    "pinned_use_cuda_host_register": _bool,
    "pinned_use_host_register": _bool,
    "pinned_num_register_threads": _positive_int,
    "pinned_use_background_threads": _bool,
    "graph_capture_record_stream_reuse": _bool,
    "per_process_memory_fraction": _threshold,
}


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


@dataclass
class AllocConf:
    """Parsed options and every problem torch would raise on."""

    raw: str
    options: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def expandable_segments(self) -> bool:
        return self.options.get("expandable_segments", "").lower() == "true"

    @property
    def backend(self) -> str:
        return self.options.get("backend", "native")


def parse_alloc_conf(
    raw: str,
    accepted: set[str] | None = None,
    unknown_text: str = "Unrecognized CachingAllocator option: {name}",
) -> AllocConf:
    """Parse the variable's value; never raises.

    ``accepted`` narrows the known options to those of the installed torch release;
    ``unknown_text`` is that release's error message for an unknown option.
    """
    conf = AllocConf(raw=raw)
    if len(raw) > MAX_CHARS:
        conf.problems.append(
            f"{len(raw):,} characters long: not an allocator setting (the "
            f"longest real one is under 200; only {MAX_CHARS} are read)"
        )
        return conf
    # split on commas that are not inside [...] (roundup_power2_divisions lists)
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(raw):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(raw[start:i])
            start = i + 1
    parts.append(raw[start:])
    for part in (p.strip() for p in parts):
        if not part:
            continue
        if len(conf.problems) >= MAX_PROBLEMS:
            conf.problems.append("… more problems not listed (torch stops at the first)")
            break
        key, sep, value = part.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            conf.problems.append(f"'{_short(part)}' is not of the form key:value")
            continue
        check = OPTIONS.get(key)
        if check is None or (accepted is not None and key not in accepted):
            conf.problems.append(
                f"unknown option '{_short(key)}' (torch raises \"{unknown_text.format(name=_short(key))}\")"
            )
            continue
        err = check(value)
        if err:
            conf.problems.append(f"{key}:{_short(value)}: {err}")
            continue
        conf.options[key] = value
    if conf.backend == "cudaMallocAsync" and conf.expandable_segments:
        conf.problems.append("expandable_segments has no effect with backend:cudaMallocAsync")
    return conf
