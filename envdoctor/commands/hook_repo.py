"""What the repository itself says about its configs, for the hook: which YAML files are GRPO
configs (what its scripts parse them into, else keys only GRPO has), which accelerate config
and how many processes each GRPO recipe is launched with (its README / scripts / Makefile /
slurm launch lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envdoctor.plan.repo_launches import RepoLaunch, RepoLaunches

#: GRPOConfig keys no SFT / DPO / reward / KTO / ORPO config has: a mapping holding one is a GRPO
#: config (``beta``, ``max_prompt_length``, ``loss_type``, ``learning_rate`` are shared with DPO
#: and SFT, so they say nothing alone)
GRPO_ONLY = frozenset(
    {
        "num_generations",
        "reward_funcs",
        "reward_weights",
        "use_vllm",
        "vllm_mode",
        "vllm_device",
        "vllm_server_host",
        "vllm_server_port",
        "vllm_server_base_url",
        "vllm_gpu_memory_utilization",
        "vllm_tensor_parallel_size",
        "vllm_max_model_len",
        "vllm_max_model_length",
        "num_iterations",
        "epsilon",
        "epsilon_high",
        "scale_rewards",
        "generation_batch_size",
        "steps_per_generation",
        "mask_truncated_completions",
        "top_entropy_quantile",
        "importance_sampling_level",
        "ds3_gather_for_generation",
        "num_generations_eval",
    }
)
_GRPO_CLASSES = re.compile(r"\b(GRPOConfig|GRPOTrainer)\b")
_OTHER_CLASSES = re.compile(
    r"\b(SFTConfig|SFTTrainer|DPOConfig|DPOTrainer|ORPOConfig|KTOConfig|CPOConfig|RewardConfig|PPOConfig)\b"
)
MAX_SCRIPT_BYTES = 2 * 1024 * 1024


@dataclass
class Recipe:
    """How the repository launches one GRPO config: its accelerate config and process counts."""

    accelerate: str | None = None
    counts: tuple[int, ...] = ()
    launches: list[str] = field(default_factory=list)  # "README.md:40" …


@lru_cache(maxsize=4)
def launches_of(root: Path) -> RepoLaunches:
    from envdoctor.plan.repo_launches import read_launches

    return read_launches(root)


def _script_says(root: Path, script: str | None) -> str | None:
    """``grpo`` / ``other`` by the trainer classes the launched script names (None: not read)."""
    if not script or "*" in script:
        return None
    path = root / script
    try:
        if not path.is_file() or path.stat().st_size > MAX_SCRIPT_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if _GRPO_CLASSES.search(text):
        return "grpo"
    return "other" if _OTHER_CLASSES.search(text) else None


def grpo_or_why(path: str, keys: set[str], root: Path) -> str | None:
    """None when ``path`` is a GRPO config, else why it is not judged as one."""
    said = {_script_says(root, ln.script) for ln in launches_of(root).for_config(path)} - {None}
    if "grpo" in said:
        return None
    if "other" in said:
        scripts = sorted({ln.script or "" for ln in launches_of(root).for_config(path)})
        return (
            f"not a GRPO config: the repository launches it with {', '.join(scripts)}, which "
            "parses another trainer's config (SFT, DPO…), not GRPOConfig"
        )
    if keys & GRPO_ONLY:
        return None
    return (
        "not judged as a GRPO config: it holds none of the keys only GRPO has "
        "(num_generations, reward_funcs, use_vllm, vllm_mode…) and no launch line of the "
        "repository runs it with a GRPO script (an SFT or DPO recipe?)"
    )


def _count(launch: RepoLaunch, root: Path) -> int | None:
    from envdoctor.plan.repo_launches import accelerate_processes

    if launch.processes:
        per_node = "torchrun" in launch.text or "torch.distributed.run" in launch.text
        return launch.processes * (launch.machines or 1) if per_node else launch.processes
    if launch.accelerate and "*" not in launch.accelerate:
        return accelerate_processes(root / launch.accelerate)
    return None


def recipe(path: str, root: Path) -> Recipe:
    """The accelerate config and process counts the repository's launch lines give ``path``."""
    out = Recipe()
    counts: list[int] = []
    for ln in launches_of(root).for_config(path):
        out.launches.append(f"{ln.file}:{ln.line}")
        if (
            out.accelerate is None
            and ln.accelerate
            and "*" not in ln.accelerate
            and (root / ln.accelerate).is_file()
        ):
            out.accelerate = ln.accelerate.removeprefix("./")
        n = _count(ln, root)
        if n is not None and n not in counts:
            counts.append(n)
    out.counts = tuple(counts)
    return out


def used_by_grpo(accelerate: str, grpo: list[str], root: Path) -> bool:
    """Whether a launch line of the repository runs one of these GRPO configs with ``accelerate``."""
    return any(
        ln.config and any(recipe_matches(ln, g) for g in grpo)
        for ln in launches_of(root).for_accelerate(accelerate)
    )


def recipe_matches(launch: RepoLaunch, config: str) -> bool:
    from envdoctor.plan.repo_launches import RepoLaunches

    return bool(RepoLaunches([launch]).for_config(config))
