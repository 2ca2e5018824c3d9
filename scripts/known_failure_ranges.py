"""Re-derive the TRL-side version ranges of the known-failures catalogue from TRL's source.

    python scripts/known_failure_ranges.py /path/to/trl.git [--wheels DIR]

For each probe (a file of huggingface/trl and a regular expression) it prints, per release tag of a
bare mirror (and per ``trl-X.Y.Z-py3-none-any.whl`` in ``--wheels`` for releases the mirror lacks),
whether the pattern is there: the first and last release of each run is the range an entry of
rules/knowledge/known_failures/ cites at its tags. Reads only local files; never downloads.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

#: entry id -> (path in the TRL tree, regex): the line each range is read from.
PROBES: dict[str, tuple[str, str]] = {
    "trl-guided-decoding-params-vllm-0.12 (unconditional import)": (
        "trl/trainer/grpo_trainer.py",
        r"^    from vllm\.sampling_params import GuidedDecodingParams",
    ),
    "trl-vllm-serve-guided-decoding-params-vllm-0.12": (
        "trl/scripts/vllm_serve.py",
        r"^    from vllm\.sampling_params import GuidedDecodingParams",
    ),
    "trl-legacy-vllm-v1-no-model-executor": (
        "trl/trainer/grpo_trainer.py",
        r"llm_engine\.model_executor\.driver_worker",
    ),
    "trl-vllm-serve-worker-extension-cls-vllm-0.7": ("trl/scripts/vllm_serve.py", r"worker_extension_cls="),
    "trl-server-weight-sync-dtype-vllm-0.9 (torch.dtype through collective_rpc)": (
        "trl/scripts/vllm_serve.py",
        r'"args": \(request\.name, dtype,',
    ),
    "trl-colocate-python-launch-no-rank (TRL sets RANK)": (
        "trl/trainer/grpo_trainer.py",
        r'os\.environ\["RANK"\] = ',
    ),
    "trl-0.18-colocate-untruncated-prompt (decodes the truncated ids)": (
        "trl/trainer/grpo_trainer.py",
        r"prompts_text = self\.processing_class\.batch_decode",
    ),
    "trl-0.22-scale-rewards-swapped": (
        "trl/trainer/grpo_trainer.py",
        r'elif self\.scale_rewards == "group":',
    ),
    "trl-warnings-issued-transformers-5.1": (
        "trl/trainer/grpo_trainer.py",
        r'model\.warnings_issued\["estimate_tokens"\]',
    ),
    "trl-0.25-colocate-chat-ignores-prompt-truncation": (
        "trl/trainer/grpo_trainer.py",
        r'"truncate_prompt_tokens": self\.max_prompt_length',
    ),
    "trl-0.27-vllm-serve-get-open-port-vllm-0.14": (
        "trl/scripts/vllm_serve.py",
        r"^    from vllm\.utils import get_open_port",
    ),
    "trl-colocate-sleep-mode-reloads-checkpoint (guard added)": (
        "trl/generation/vllm_generation.py",
        r"_llm_weights_sleeping",
    ),
    "trl-1.11-nccl-trainer-send-weights-args-vllm-0.28 (unguarded import)": (
        "trl/generation/vllm_client.py",
        r"^if is_vllm_available\(\):\n    from vllm\.distributed\.weight_transfer\.nccl_engine",
    ),
    # the TRL side of trl_transformers.yaml and trl_misc.yaml (GRPOConfig keys: grpo_config_keys.yaml)
    "trl-get-train-sampler-transformers-4.52 (sampler without the dataset argument)": (
        "trl/trainer/grpo_trainer.py",
        r"def _get_train_sampler\(self\) -> Sampler",
    ),
    "trl-seed-worker-transformers-4.52 (own dataloader with seed_worker)": (
        "trl/trainer/grpo_trainer.py",
        r'dataloader_params\["worker_init_fn"\] = seed_worker',
    ),
    "trl-seed-worker-transformers-4.52 (fix: seed_worker bound with partial)": (
        "trl/trainer/grpo_trainer.py",
        r'dataloader_params\["worker_init_fn"\] = partial\(',
    ),
    "trl-0.19.0-colocate-generation-kwargs-none (unguarded update)": (
        "trl/trainer/grpo_trainer.py",
        r"^                generation_kwargs\.update\(self\.args\.generation_kwargs\)",
    ),
    "trl-0.28-colocate-tools-llm-attribute": (
        "trl/trainer/grpo_trainer.py",
        r"max_model_len = self\.llm\.llm_engine\.model_config",
    ),
    "trl-grpo-cli-reward-funcs-ignored (script passes the reward model)": (
        "trl/scripts/grpo.py",
        r"reward_funcs=reward_model,",
    ),
    "trl-0.22-cli-soft-overlong-punishment-factory (registry holds the factory)": (
        "trl/scripts/grpo.py",
        r'"get_soft_overlong_punishment": get_soft_overlong_punishment,',
    ),
    "trl-reward-func-without-kwargs-completion-ids": (
        "trl/trainer/grpo_trainer.py",
        r"completion_ids=completion_ids_list",
    ),
    "trl-0.20-reward-none-row-trainer-state-not-subscriptable (trainer_state in reward_kwargs)": (
        "trl/trainer/grpo_trainer.py",
        r'reward_kwargs\["trainer_state"\] = self\.state',
    ),
    "trl-0.20-reward-none-row-trainer-state-not-subscriptable (unfiltered row kwargs)": (
        "trl/trainer/grpo_trainer.py",
        r"row_reward_kwargs = \{key: value\[nan_row_idx\] for key, value in reward_kwargs\.items\(\)\}",
    ),
    "trl-grpo-iterable-dataset-refused": (
        "trl/trainer/grpo_trainer.py",
        r"Iterable datasets are not yet supported in GRPOTrainer",
    ),
    "trl-entropy-mask-gather-hang (fix: pad across processes)": (
        "trl/trainer/grpo_trainer.py",
        r"pad_across_processes\(local",
    ),
    "trl-0.23-colocate-raw-logprobs-importance-sampling (fix: processed logprobs)": (
        "trl/trainer/grpo_trainer.py",
        r'logprobs_mode="processed_logprobs"',
    ),
    "trl-server-raw-logprobs-importance-sampling (fix: processed logprobs)": (
        "trl/scripts/vllm_serve.py",
        r'logprobs_mode="processed_logprobs"',
    ),
    "trl-0.26.0-num-generations-eval-validation (fix)": (
        "trl/trainer/grpo_config.py",
        r"num_generations = self\.num_generations_eval or self\.num_generations",
    ),
    # the ecosystem entries (deepspeed_fsdp.yaml, peft_lora.yaml, kernels.yaml)
    "trl-0.14/0.15-zero3-deepspeed-0.16.4-register-hooks (renamed hook handled)": (
        "trl/models/utils.py",
        r"_register_deepspeed_module",
    ),
    "trl-grpo-fsdp-before-0.18 (FSDP handled)": (
        "trl/trainer/grpo_trainer.py",
        r"FullyShardedDataParallel as FSDP",
    ),
    "trl-fsdp2-vllm-weights-never-synced-0.18 (FSDP2 sync)": (
        "trl/trainer/grpo_trainer.py",
        r"def _sync_fsdp2_params_to_vllm",
    ),
    "trl-0.14-peft-vllm-base-model-prefix (PEFT names stripped)": (
        "trl/trainer/grpo_trainer.py",
        r'removeprefix\("base_model\.model\."\)',
    ),
    "trl-0.15-peft-gradient-checkpointing-no-grad (input grads enabled)": (
        "trl/trainer/grpo_trainer.py",
        r"enable_input_require_grads\(\)",
    ),
    "trl-0.17-liger-loss-peft-refused": (
        "trl/trainer/grpo_trainer.py",
        r"Liger loss is not supported with a PEFT model",
    ),
    "trl-0.17-liger-loss-only-bnpo": ("trl/trainer/grpo_trainer.py", r"only supports `bnpo` for now"),
    "liger-*-sequence-importance-sampling-refused": (
        "trl/trainer/grpo_trainer.py",
        r"only support token-level importance sampling",
    ),
    "liger-kernel-off-policy-mask-refused": (
        "trl/trainer/grpo_trainer.py",
        r"does not support off-policy sequence masking",
    ),
    "liger-*-drops-vllm-importance-sampling (ratio passed)": (
        "trl/trainer/grpo_trainer.py",
        r"vllm_is_ratio=",
    ),
    "vllm-colocate-bnb-8bit-refused (trainer)": (
        "trl/trainer/grpo_trainer.py",
        r"in-flight 8-bit quantization",
    ),
    "vllm-colocate-bnb-8bit-refused (generation module)": (
        "trl/generation/vllm_generation.py",
        r"in-flight 8-bit quantization",
    ),
    "trl-peft-sync-ref-model-refused": (
        "trl/trainer/grpo_trainer.py",
        r"sync_ref_model=True` while using a PEFT model",
    ),
    "trl-peft-model-with-peft-config-refused": (
        "trl/trainer/grpo_trainer.py",
        r"PeftModel` instance together with a `peft_config`",
    ),
    "deepspeed-0.19.2-zero3-peft-mixed-dtype (adapters kept in the base dtype)": (
        "trl/trainer/grpo_trainer.py",
        r'get_peft_model_kwargs\["autocast_adapter_dtype"\] = False',
    ),
    "trl-peft-zero3-gradient-checkpointing-non-reentrant (reentrant forced)": (
        "trl/trainer/grpo_trainer.py",
        r"You are using PEFT with DeepSpeed ZeRO-3 and gradient",
    ),
    "liger-kernel-peft-lm-head-refused": (
        "trl/trainer/grpo_trainer.py",
        r"incompatible with applying a PEFT adapter to `lm_head`",
    ),
    "liger-kernel-prompt-learning-peft-refused": (
        "trl/trainer/grpo_trainer.py",
        r"incompatible with prompt-learning PEFT methods",
    ),
    "trl-cast-lm-head-fp32-peft-lm-head-refused": (
        "trl/trainer/grpo_trainer.py",
        r"is not supported when the lm_head carries a PEFT",
    ),
}


def _version(tag: str) -> Version | None:
    try:
        return Version(tag.lstrip("v"))
    except InvalidVersion:
        return None


def tag_sources(mirror: Path) -> dict[Version, str]:
    out = subprocess.run(
        ["git", "-C", str(mirror), "tag"], capture_output=True, text=True, check=True
    ).stdout.split()
    tags = {v: t for t in out if (v := _version(t)) is not None and v >= Version("0.14.0")}
    return dict(sorted(tags.items()))


def read_tag(mirror: Path, tag: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(mirror), "show", f"{tag}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def read_wheel(wheel: Path, path: str) -> str | None:
    with zipfile.ZipFile(wheel) as zf:
        try:
            return zf.read(path).decode("utf-8")
        except KeyError:
            return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirror", type=Path, help="a bare clone of huggingface/trl")
    parser.add_argument("--wheels", type=Path, help="a folder of TRL wheels for newer releases")
    args = parser.parse_args()
    sources: dict[Version, object] = dict(tag_sources(args.mirror))
    if args.wheels:
        for whl in sorted(args.wheels.glob("trl-*-py3-none-any.whl")):
            v = _version(whl.name.split("-")[1])
            if v is not None and v not in sources:
                sources[v] = whl
    releases = sorted(sources)
    for name, (path, pattern) in PROBES.items():
        rx = re.compile(pattern, re.MULTILINE)
        found = []
        for v in releases:
            src = sources[v]
            text = read_wheel(src, path) if isinstance(src, Path) else read_tag(args.mirror, str(src), path)
            found.append(bool(text and rx.search(text)))
        runs: list[str] = []
        start: Version | None = None
        for i, hit in enumerate([*found, False]):
            if hit and start is None:
                start = releases[i]
            elif not hit and start is not None:
                runs.append(f"{start}..{releases[i - 1]}")
                start = None
        print(f"{name}\n    {path}: {', '.join(runs) or 'never'}")


if __name__ == "__main__":
    main()
