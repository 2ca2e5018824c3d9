"""Run a memory-conscious GRPO pilot from the final SFT adapter.

The script keeps the proven SFT LoRA adapter trainable, excludes the fixed
LLaMA-Factory validation split, and uses deterministic numeric and format
rewards.  It deliberately uses TRL's native Transformers generation instead of
vLLM so the pilot can run on a single 8 GiB GPU.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

import trl.import_utils as trl_import_utils


def normalize_trl_availability_flags() -> list[str]:
    """Work around TRL 0.24 with Transformers 5.x availability tuples.

    Transformers 5.x returns ``(available, version)`` from its private package
    probe even when the caller does not request a version. TRL 0.24 stores that
    tuple as a boolean, making unavailable optional packages look truthy and
    breaking GRPO imports. Normalize only those cached private flags; no package
    behavior changes when the flags are already booleans.
    """
    patched = []
    for name, value in vars(trl_import_utils).items():
        if (
            name.startswith("_")
            and name.endswith("_available")
            and isinstance(value, tuple)
        ):
            setattr(trl_import_utils, name, bool(value[0]))
            patched.append(name)
    return patched


PATCHED_TRL_FLAGS = normalize_trl_availability_flags()

from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from evaluation_utils import (  # noqa: E402
    extract_ground_truth,
    follows_answer_format,
    score_response,
)
from train_opd_gkd import (  # noqa: E402
    load_records,
    print_cuda_memory,
    resolve_terminators,
    split_source_indices,
    write_json_atomic,
)


DEFAULT_BASE_MODEL = "Qwen/Qwen2.5-Math-1.5B"
DEFAULT_ADAPTER = Path("outputs/qwen25_math_15b_base_lora_sft_v7/checkpoint-888")
DEFAULT_DATASET = Path("data/gsm8k_sft_clean.json")
DEFAULT_OUTPUT_DIR = Path("outputs/grpo/qwen25_math_15b_grpo_smoke")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run a small exact-answer GRPO job from the final SFT adapter."
    )
    parser.add_argument("--base-model", default=DEFAULT_BASE_MODEL)
    parser.add_argument("--adapter", type=Path, default=DEFAULT_ADAPTER)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--num-samples", type=int, default=8)
    parser.add_argument(
        "--all-training-samples",
        action="store_true",
        help="Use every sample outside the fixed validation split.",
    )
    parser.add_argument("--validation-size", type=float, default=0.05)
    parser.add_argument("--split-seed", type=int, default=42)
    parser.add_argument("--max-steps", type=int, default=1)
    parser.add_argument("--max-prompt-length", type=int, default=512)
    parser.add_argument("--max-completion-length", type=int, default=128)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--gradient-accumulation-steps", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=5.0e-6)
    parser.add_argument("--temperature", type=float, default=0.9)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument(
        "--beta",
        type=float,
        default=0.0,
        help=(
            "KL coefficient. This continued-adapter implementation requires 0: "
            "disabling the adapter would reference Raw Base, not the SFT policy."
        ),
    )
    parser.add_argument("--accuracy-reward-weight", type=float, default=1.0)
    parser.add_argument("--format-reward-weight", type=float, default=0.1)
    parser.add_argument(
        "--mask-truncated-completions",
        action=argparse.BooleanOptionalAction,
        default=True,
    )
    parser.add_argument("--save-steps", type=int, default=0)
    parser.add_argument("--save-total-limit", type=int, default=5)
    parser.add_argument(
        "--save-final-adapter",
        action=argparse.BooleanOptionalAction,
        default=False,
    )
    parser.add_argument("--resume-from-checkpoint", type=Path)
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


def validate_args(args: argparse.Namespace) -> None:
    if args.num_samples <= 0 and not args.all_training_samples:
        raise ValueError("--num-samples must be positive")
    if not 0.0 <= args.validation_size < 1.0:
        raise ValueError("--validation-size must be in [0, 1)")
    if args.max_steps <= 0:
        raise ValueError("--max-steps must be positive")
    if args.max_prompt_length <= 0 or args.max_completion_length <= 0:
        raise ValueError("prompt and completion lengths must be positive")
    if args.num_generations < 2:
        raise ValueError("--num-generations must be at least 2 for group-relative rewards")
    if args.gradient_accumulation_steps <= 0:
        raise ValueError("--gradient-accumulation-steps must be positive")
    if args.gradient_accumulation_steps % args.num_generations != 0:
        raise ValueError(
            "gradient accumulation must be divisible by --num-generations "
            "for one-process, batch-size-one GRPO"
        )
    if args.learning_rate <= 0:
        raise ValueError("--learning-rate must be positive")
    if args.temperature <= 0:
        raise ValueError("--temperature must be positive")
    if not 0.0 < args.top_p <= 1.0:
        raise ValueError("--top-p must be in (0, 1]")
    if args.beta != 0.0:
        raise ValueError(
            "--beta must remain 0 for continued SFT-adapter GRPO; a nonzero KL "
            "would incorrectly use Raw Base as the PEFT reference"
        )
    if args.accuracy_reward_weight <= 0:
        raise ValueError("--accuracy-reward-weight must be positive")
    if args.format_reward_weight < 0:
        raise ValueError("--format-reward-weight must be non-negative")
    if args.save_steps < 0:
        raise ValueError("--save-steps must be non-negative")
    if args.save_total_limit <= 0:
        raise ValueError("--save-total-limit must be positive")
    if not args.adapter.is_dir():
        raise FileNotFoundError(f"adapter directory does not exist: {args.adapter}")
    if not args.dataset.is_file():
        raise FileNotFoundError(f"dataset file does not exist: {args.dataset}")
    if args.resume_from_checkpoint is not None and not args.resume_from_checkpoint.is_dir():
        raise FileNotFoundError(
            f"resume checkpoint does not exist: {args.resume_from_checkpoint}"
        )


def build_grpo_records(
    records: list[dict],
    num_samples: int,
    seed: int,
    candidate_source_indices: list[int] | None = None,
) -> list[dict]:
    """Select prompts deterministically and retain only numeric reward labels."""
    candidates = (
        list(range(len(records)))
        if candidate_source_indices is None
        else list(candidate_source_indices)
    )
    if any(index < 0 or index >= len(records) for index in candidates):
        raise ValueError("candidate source index is outside the dataset")
    if len(set(candidates)) != len(candidates):
        raise ValueError("candidate source indices contain duplicates")
    if num_samples > len(candidates):
        raise ValueError(
            f"--num-samples {num_samples} exceeds training split size {len(candidates)}"
        )

    selected_indices = random.Random(seed).sample(candidates, num_samples)
    converted = []
    for source_index in selected_indices:
        record = records[source_index]
        instruction = record.get("instruction")
        response = record.get("output")
        system = record.get("system")
        extra_input = record.get("input", "")
        if not isinstance(instruction, str) or not instruction.strip():
            raise ValueError(f"record {source_index} has no valid instruction")
        if not isinstance(response, str) or not response.strip():
            raise ValueError(f"record {source_index} has no valid output")
        if not isinstance(system, str) or not system.strip():
            raise ValueError(f"record {source_index} has no valid system prompt")
        if not isinstance(extra_input, str):
            raise ValueError(f"record {source_index} has a non-string input")
        ground_truth = extract_ground_truth(response)
        if ground_truth is None:
            raise ValueError(f"record {source_index} has no parseable #### answer")

        user_content = instruction.strip()
        if extra_input.strip():
            user_content = f"{user_content}\n\n{extra_input.strip()}"
        converted.append(
            {
                "source_index": source_index,
                "prompt": [
                    {"role": "system", "content": system.strip()},
                    {"role": "user", "content": user_content},
                ],
                "ground_truth": ground_truth,
            }
        )
    return converted


def completion_to_text(completion: Any) -> str:
    """Normalize TRL standard or conversational completion structures."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        content = completion.get("content")
        return content if isinstance(content, str) else ""
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                return message["content"]
    return ""


def numeric_accuracy_reward(
    completions: list[Any], ground_truth: list[str], **_: Any
) -> list[float]:
    if len(completions) != len(ground_truth):
        raise ValueError("completions and ground_truth have different lengths")
    return [
        float(score_response(completion_to_text(completion), answer)["correct"])
        for completion, answer in zip(completions, ground_truth)
    ]


def strict_format_reward(completions: list[Any], **_: Any) -> list[float]:
    return [
        float(follows_answer_format(completion_to_text(completion)))
        for completion in completions
    ]


def ensure_trl_model_compatibility(model: Any) -> list[str]:
    """Restore model attributes assumed by TRL 0.24 but removed in Transformers 5.x."""
    patched = []
    try:
        model.warnings_issued
    except AttributeError:
        model.warnings_issued = {}
        patched.append("warnings_issued")
    return patched


def build_grpo_config_kwargs(args: argparse.Namespace) -> dict:
    return {
        "output_dir": str(args.output_dir),
        "max_steps": args.max_steps,
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "learning_rate": args.learning_rate,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "bf16": True,
        "gradient_checkpointing": True,
        "gradient_checkpointing_kwargs": {"use_reentrant": False},
        "use_cache": False,
        "max_prompt_length": args.max_prompt_length,
        "max_completion_length": args.max_completion_length,
        "num_generations": args.num_generations,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "beta": args.beta,
        "reward_weights": [
            args.accuracy_reward_weight,
            args.format_reward_weight,
        ],
        "scale_rewards": "group",
        "loss_type": "dapo",
        "mask_truncated_completions": args.mask_truncated_completions,
        "remove_unused_columns": False,
        "use_vllm": False,
        "logging_steps": 1,
        "logging_first_step": True,
        "save_strategy": "steps" if args.save_steps > 0 else "no",
        "save_steps": max(1, args.save_steps),
        "save_total_limit": args.save_total_limit,
        "eval_strategy": "no",
        "report_to": "none",
        "dataloader_num_workers": 0,
        "dataloader_pin_memory": False,
        "seed": args.seed,
        "data_seed": args.seed,
    }


def build_grpo_config(args: argparse.Namespace) -> GRPOConfig:
    return GRPOConfig(**build_grpo_config_kwargs(args))


def main() -> None:
    args = parse_args()
    validate_args(args)
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA is required for this GRPO script")
    if not torch.cuda.is_bf16_supported():
        raise RuntimeError("the selected GPU does not report bfloat16 support")

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()

    print("Loading and converting GRPO data...")
    records = load_records(args.dataset)
    training_source_indices, validation_source_indices = split_source_indices(
        len(records), args.validation_size, args.split_seed
    )
    selected_sample_count = (
        len(training_source_indices) if args.all_training_samples else args.num_samples
    )
    grpo_records = build_grpo_records(
        records,
        selected_sample_count,
        args.seed,
        candidate_source_indices=training_source_indices,
    )
    train_dataset = Dataset.from_list(grpo_records)
    source_indices = list(train_dataset["source_index"])
    if set(source_indices) & set(validation_source_indices):
        raise RuntimeError("training data overlaps the fixed validation split")
    print(
        f"Dataset split: train={len(training_source_indices)}, "
        f"validation={len(validation_source_indices)}"
    )
    print("Selected source indices:", source_indices)

    output_contents = (
        {path.name for path in args.output_dir.iterdir()}
        if args.output_dir.exists()
        else set()
    )
    initialization_only = output_contents == {"run_manifest.json"}
    if output_contents and not initialization_only and args.resume_from_checkpoint is None:
        raise FileExistsError(
            f"output directory is not empty: {args.output_dir} (choose a new directory)"
        )
    args.output_dir.mkdir(parents=True, exist_ok=True)

    manifest = {
        "status": "initialized",
        "mode": "grpo_exact_numeric_reward",
        "base_model": args.base_model,
        "initial_adapter": str(args.adapter),
        "dataset": str(args.dataset),
        "dataset_num_records": len(records),
        "validation_size": args.validation_size,
        "split_seed": args.split_seed,
        "training_split_size": len(training_source_indices),
        "validation_split_size": len(validation_source_indices),
        "validation_source_indices": validation_source_indices,
        "selected_training_source_indices": source_indices,
        "num_samples": selected_sample_count,
        "max_steps": args.max_steps,
        "max_prompt_length": args.max_prompt_length,
        "max_completion_length": args.max_completion_length,
        "num_generations": args.num_generations,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "learning_rate": args.learning_rate,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "beta": args.beta,
        "accuracy_reward_weight": args.accuracy_reward_weight,
        "format_reward_weight": args.format_reward_weight,
        "mask_truncated_completions": args.mask_truncated_completions,
        "save_steps": args.save_steps,
        "save_total_limit": args.save_total_limit,
        "save_final_adapter": args.save_final_adapter,
        "seed": args.seed,
        "trl_transformers_compat_flags_patched": PATCHED_TRL_FLAGS,
        "resume_from_checkpoint": (
            str(args.resume_from_checkpoint)
            if args.resume_from_checkpoint is not None
            else None
        ),
    }
    manifest_path = args.output_dir / "run_manifest.json"
    write_json_atomic(manifest_path, manifest)
    print("Saved run manifest to:", manifest_path)

    print("Loading tokenizer...")
    tokenizer = AutoTokenizer.from_pretrained(args.base_model)
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer has neither a pad token nor an EOS token")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    terminators = resolve_terminators(tokenizer)
    print("Generation terminators:", terminators)

    print("Loading BF16 SFT policy and trainable LoRA adapter...")
    base_model = AutoModelForCausalLM.from_pretrained(
        args.base_model,
        dtype=torch.bfloat16,
        attn_implementation="sdpa",
        device_map={"": 0},
    )
    policy = PeftModel.from_pretrained(base_model, args.adapter, is_trainable=True)
    policy.config.use_cache = False
    policy.enable_input_require_grads()
    patched_model_attributes = ensure_trl_model_compatibility(policy)
    if patched_model_attributes:
        print("Patched TRL model attributes:", patched_model_attributes)
    trainable_parameters = [
        (name, parameter)
        for name, parameter in policy.named_parameters()
        if parameter.requires_grad
    ]
    if not trainable_parameters:
        raise RuntimeError("the policy has no trainable adapter parameters")
    policy.print_trainable_parameters()
    tracked_name, tracked_parameter = trainable_parameters[0]
    tracked_before = tracked_parameter.detach().float().cpu().clone()
    memory_after_load = print_cuda_memory("After model loading")

    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=[numeric_accuracy_reward, strict_format_reward],
        args=build_grpo_config(args),
        train_dataset=train_dataset,
        processing_class=tokenizer,
    )
    trainer.generation_config.eos_token_id = terminators
    trainer.generation_config.pad_token_id = tokenizer.pad_token_id

    print(
        "Starting GRPO training: "
        f"steps={args.max_steps}, samples={selected_sample_count}, "
        f"generations={args.num_generations}, "
        f"max_completion_length={args.max_completion_length}"
    )
    try:
        train_result = trainer.train(
            resume_from_checkpoint=(
                str(args.resume_from_checkpoint)
                if args.resume_from_checkpoint is not None
                else None
            )
        )
    except torch.OutOfMemoryError:
        print(
            "CUDA OOM during GRPO. Retry a fresh output directory with "
            "--num-generations 2 --gradient-accumulation-steps 2 and, if "
            "needed, --max-completion-length 96."
        )
        raise

    trainer.log_metrics("train", train_result.metrics)
    trainer.save_metrics("train", train_result.metrics)
    final_adapter_path = None
    if args.save_final_adapter:
        final_adapter_dir = args.output_dir / "final_adapter"
        trainer.save_model(str(final_adapter_dir))
        tokenizer.save_pretrained(final_adapter_dir)
        final_adapter_path = str(final_adapter_dir)
        print("Saved final adapter to:", final_adapter_dir)
    memory_after_train = print_cuda_memory("After training")

    tracked_after = tracked_parameter.detach().float().cpu()
    parameter_max_abs_delta = float((tracked_after - tracked_before).abs().max().item())
    parameter_updated = parameter_max_abs_delta > 0.0
    metrics_are_finite = all(
        not isinstance(value, float) or math.isfinite(value)
        for value in train_result.metrics.values()
    )
    summary = {
        **manifest,
        "status": "success",
        "eos_token_ids": terminators,
        "final_adapter": final_adapter_path,
        "tracked_parameter": tracked_name,
        "tracked_parameter_max_abs_delta": parameter_max_abs_delta,
        "tracked_parameter_updated": parameter_updated,
        "metrics_are_finite": metrics_are_finite,
        "metrics": train_result.metrics,
        "memory_after_load": memory_after_load,
        "memory_after_train": memory_after_train,
        "trl_transformers_model_attributes_patched": patched_model_attributes,
    }
    summary_path = args.output_dir / "grpo_run_summary.json"
    write_json_atomic(summary_path, summary)

    print("Tracked parameter:", tracked_name)
    print(f"Tracked parameter max |delta|: {parameter_max_abs_delta:.8g}")
    print("Parameter updated:", parameter_updated)
    if not parameter_updated:
        print(
            "Note: a one-step smoke may have identical rewards within its group, "
            "which correctly produces zero GRPO advantage and no parameter update."
        )
    print("Metrics finite:", metrics_are_finite)
    print("Saved run summary to:", summary_path)
    if trainer.state.global_step != args.max_steps:
        raise RuntimeError(
            f"expected {args.max_steps} optimizer steps, got {trainer.state.global_step}"
        )
    if not metrics_are_finite:
        raise RuntimeError("training produced a non-finite metric")


if __name__ == "__main__":
    main()
