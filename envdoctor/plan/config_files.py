"""Read GRPO and accelerate config files (YAML or JSON) safely, errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from envdoctor.errors import InputError, read_input_text

MAX_BYTES = 8 * 1024 * 1024
#: Deeper than any real config; libyaml's C composer recurses without a limit and overflows the
#: C stack (a segfault, not a RecursionError) on some 50,000 nested levels.
MAX_DEPTH = 100
ACCELERATE_KEYS = {"compute_environment", "distributed_type", "num_processes", "gpu_ids",
                   "machine_rank", "num_machines", "mixed_precision", "deepspeed_config",
                   "fsdp_config", "use_cpu", "main_training_function", "rdzv_backend"}
GRPO_KEYS = {"num_generations", "use_vllm", "vllm_mode", "vllm_device", "beta",
             "max_completion_length", "max_prompt_length", "reward_weights", "loss_type",
             "vllm_gpu_memory_utilization", "per_device_train_batch_size", "learning_rate",
             "output_dir", "model_name_or_path", "generation_batch_size", "steps_per_generation"}

try:  # the C loader is several times faster; both are safe loaders
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


def read_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """Parse a YAML/JSON file that must hold a mapping; ``what`` names it in errors."""
    source = f"{what} {path}"
    text = read_input_text(path, source, MAX_BYTES)
    try:
        if str(path).endswith(".json"):
            data = json.loads(text)
        else:
            _check_depth(text, source)
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except json.JSONDecodeError as exc:
        raise InputError(source, f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(source, f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise InputError(source, "nested too deeply") from None
    except ValueError as exc:  # a number over Python's int-string limit (4,300 digits)
        raise InputError(source, f"unreadable number: {str(exc).split(';')[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(source, f"expected a mapping of keys to values, got {type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise InputError(source, f"keys must be strings, got {bad[0]!r}")
    return data


def _check_depth(text: str, source: str) -> None:
    """Refuse YAML nested deeper than ``MAX_DEPTH`` before composing it (the event stream
    is flat, so reading it cannot overflow)."""
    if text.count("[") + text.count("{") + text.count("-") + text.count(":") <= MAX_DEPTH:
        return  # too few collection markers to reach the limit
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise InputError(source, f"nested more than {MAX_DEPTH} levels deep "
                                         f"(at line {mark.line + 1})")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def kind_of(data: dict[str, Any]) -> str:
    """``"accelerate"``, ``"grpo"`` or ``"unknown"``, by the keys a config holds."""
    keys = set(data)
    acc, grpo = len(keys & ACCELERATE_KEYS), len(keys & GRPO_KEYS)
    if "compute_environment" in keys or "distributed_type" in keys or acc > grpo:
        return "accelerate"
    if grpo:
        return "grpo"
    return "unknown"
