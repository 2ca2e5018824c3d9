# coding=utf-8
# Copyright 2025 The HuggingFace Team. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

from dataclasses import dataclass, field
from typing import Optional

import trl


# TODO: add the shared options with a mixin to reduce code duplication
@dataclass
class GRPOConfig(trl.GRPOConfig):
    """
    args for callbacks, benchmarks etc
    """

    benchmarks: list[str] = field(
        default_factory=lambda: [],
        metadata={"help": "The benchmarks to run after training."},
    )
    callbacks: list[str] = field(
        default_factory=lambda: [],
        metadata={"help": "The callbacks to run during training."},
    )
    chat_template: Optional[str] = field(default=None, metadata={"help": "The chat template to use."})
    system_prompt: Optional[str] = field(
        default=None,
        metadata={"help": "The optional system prompt to use."},
    )
    kl_reward_eta: Optional[float] = field(
        default=None,
        metadata={
            "help": "Step size eta used for the KL-based reward approximation. Defaults to learning_rate when unset."
        },
    )
    kl_entropy_focal_lambda: float = field(
        default=-0.5,
        metadata={
            "help": "Exponent lambda for entropy-based focal scaling of KL reward: weight=(1 - H_avg)^lambda. "
            "Use negative values to penalize over-confident (low-entropy) completions."
        },
    )
    kl_entropy_low_entropy_target: Optional[float] = field(
        default=None,
        metadata={
            "help": "If set, only apply entropy-based focal scaling when completion entropy is below this target "
            "(in nats). Leave unset to scale all completions."
        },
    )
    kl_entropy_pnorm_target: float = field(
        default=None,
        metadata={
            "help": "For focal_metric='p_norm', only down-weight completions whose p_norm exceeds this target."
        },
    )
    kl_entropy_focal_warmup_ratio: float = field(
        default=0,
        metadata={
            "help": "Warmup ratio for entropy focal lambda. Keeps lambda at 0 for the first warmup_ratio of steps before"
            " decaying to kl_entropy_focal_lambda."
        },
    )
    kl_entropy_focal_metric: str = field(
        default="entropy",
        metadata={
            "help": "Base metric for focal scaling: 'entropy' uses H, 'p_norm' uses (1 - p_norm)."
        },
    )
    kl_entropy_weighting_enabled: bool = field(
        default=False,
        metadata={
            "help": "If True, apply entropy-based focal scal ing to KL rewards."
        },
    )
    kl_reward_sqrt_len_scaling_enabled: bool = field(
        default=True,
        metadata={
            "help": "If True, scale KL grad norm by sqrt(effective completion length) before using as reward."
        },
    )
    kl_reward_rank_normalization_enabled: bool = field(
        default=True,
        metadata={
            "help": "If True, rank-normalize KL rewards within each prompt group to the [-1, 1] range."
        },
    )
    kl_reward_lm_head_only: bool = field(
        default=False,
        metadata={
            "help": "If True, compute KL reward gradient norm using only trainable LM head parameters. "
            "This affects reward estimation only and does not change optimizer update parameter scope."
        },
    )

    hub_model_revision: Optional[str] = field(
        default="main", metadata={"help": "The Hub model branch to push the model to."}
    )
    overwrite_hub_revision: bool = field(default=False, metadata={"help": "Whether to overwrite the Hub revision."})
    push_to_hub_revision: bool = field(default=False, metadata={"help": "Whether to push to a Hub revision/branch."})
    wandb_entity: Optional[str] = field(
        default=None,
        metadata={"help": ("The entity to store runs under.")},
    )
    wandb_project: Optional[str] = field(
        default=None,
        metadata={"help": ("The project to store runs under.")},
    )
    wandb_run_group: Optional[str] = field(
        default=None,
        metadata={"help": ("The group to store runs under.")},
    )
    kl_reward_plot_enabled: bool = field(
        default=True,
        metadata={
            "help": "When true, save per-step KL reward distribution plots to the run directory (output_dir)."
        },
    )
    kl_reward_plot_every_n_steps: int = field(
        default=5,
        metadata={
            "help": "Plot frequency in steps when KL reward plotting is enabled. Use 1 to export every logging step."
        },
    )
    kl_reward_plot_max_prompts: int = field(
        default=30,
        metadata={
            "help": "Maximum number of prompt groups to visualize per KL reward plot (sorted by standard deviation)."
        },
    )
    prompt_dump_enabled: bool = field(
        default=True,
        metadata={
            "help": "When true, persist prompt + completion snapshots to JSON files under output_dir/prompt_completions."
        },
    )
    prompt_dump_every_n_steps: int = field(
        default=5,
        metadata={"help": "Number of optimizer steps between prompt/completion dumps (must be >=1)."},
    )
    prompt_dump_max_prompts: int = field(
        default=100000,
        metadata={"help": "Maximum number of unique prompts to include in each dump snapshot."},
    )
    save_top_k: int = field(
        default=0,
        metadata={
            "help": "Save the top-k checkpoints based on `save_top_k_metric`. Set to 0 to disable."
        },
    )
    save_top_k_metric: Optional[str] = field(
        default=None,
        metadata={
            "help": "Metric key to rank checkpoints for top-k saving (e.g. 'rewards/accuracy_reward/mean')."
        },
    )
    save_top_k_greater_is_better: bool = field(
        default=True,
        metadata={
            "help": "If true, higher metric is better for top-k saving; otherwise lower is better."
        },
    )
    save_resume_steps: int = field(
        default=0,
        metadata={
            "help": "Save a full resume checkpoint to checkpoint-last every N steps; set to 0 to disable."
        },
    )


@dataclass
class SFTConfig(trl.SFTConfig):
    """
    args for callbacks, benchmarks etc
    """

    benchmarks: list[str] = field(
        default_factory=lambda: [],
        metadata={"help": "The benchmarks to run after training."},
    )
    callbacks: list[str] = field(
        default_factory=lambda: [],
        metadata={"help": "The callbacks to run during training."},
    )
    chat_template: Optional[str] = field(default=None, metadata={"help": "The chat template to use."})
    system_prompt: Optional[str] = field(
        default=None,
        metadata={"help": "The optional system prompt to use for benchmarking."},
    )
    hub_model_revision: Optional[str] = field(
        default="main",
        metadata={"help": "The Hub model branch to push the model to."},
    )
    overwrite_hub_revision: bool = field(default=False, metadata={"help": "Whether to overwrite the Hub revision."})
    push_to_hub_revision: bool = field(default=False, metadata={"help": "Whether to push to a Hub revision/branch."})
    wandb_entity: Optional[str] = field(
        default=None,
        metadata={"help": ("The entity to store runs under.")},
    )
    wandb_project: Optional[str] = field(
        default=None,
        metadata={"help": ("The project to store runs under.")},
    )
    wandb_run_group: Optional[str] = field(
        default=None,
        metadata={"help": ("The group to store runs under.")},
    )


@dataclass
class GRPOScriptArguments(trl.ScriptArguments):
    """
    Script arguments for the GRPO training script.

    Args:
        reward_funcs (`list[str]`):
            List of reward functions. Possible values: 'accuracy', 'format', 'reasoning_steps', 'cosine', 'repetition_penalty', 'length', 'tag_count', 'code', 'ioi_code', 'code_format', 'soft_overlong_punishment'.
        cosine_min_value_wrong (`float`):
            Minimum reward for cosine scaling for wrong answers.
        cosine_max_value_wrong (`float`):
            Maximum reward for cosine scaling for wrong answers.
        cosine_min_value_correct (`float`):
            Minimum reward for cosine scaling for correct answers.
        cosine_max_value_correct (`float`):
            Maximum reward for cosine scaling for correct answers.
        cosine_max_len (`int`):
            Maximum length for cosine scaling.
        code_language (`str`):
            Language for code format reward.
        max_completion_len (`int`):
            Maximum number of tokens in completion.
        soft_punish_cache (`int`):
            Minimum number of tokens in completion.
    """

    reward_funcs: list[str] = field(
        default_factory=lambda: [],
        metadata={
            "help": "List of reward functions. Possible values: 'accuracy', 'format', 'reasoning_steps', 'cosine', 'repetition_penalty', 'length', tag_count', 'code', 'code_format'"
        },
    )
    cosine_min_value_wrong: float = field(
        default=0.0,
        metadata={"help": "Minimum reward for wrong answers"},
    )
    cosine_max_value_wrong: float = field(
        default=-0.5,
        metadata={"help": "Maximum reward for wrong answers"},
    )
    cosine_min_value_correct: float = field(
        default=0.5,
        metadata={"help": "Minimum reward for correct answers"},
    )
    cosine_max_value_correct: float = field(
        default=1.0,
        metadata={"help": "Maximum reward for correct answers"},
    )
    cosine_max_len: int = field(
        default=1000,
        metadata={"help": "Maximum length for scaling"},
    )
    repetition_n_grams: int = field(
        default=3,
        metadata={"help": "Number of n-grams for repetition penalty reward"},
    )
    repetition_max_penalty: float = field(
        default=-1.0,
        metadata={"help": "Maximum (negative) penalty for for repetition penalty reward"},
    )
    code_language: str = field(
        default="python",
        metadata={
            "help": "Language for code format reward. Based on E2B supported languages https://e2b.dev/docs/code-interpreting/supported-languages",
            "choices": ["python", "javascript", "r", "java", "bash", "cpp"],
        },
    )
    code_eval_test_batch_size: int = field(
        default=1,
        metadata={
            "help": "for each generation, evaluate these many test cases in parallel, then check if any of them failed (0 score): if so stop evaluating; otherwise continue with the next batch of test cases. Useful to avoid overloading the eval server + save time on wrong solutions"
        },
    )
    parallel_code_exec_per_proc: int = field(
        default=2,
        metadata={
            "help": "Number of parallel E2B code executions per process. Default of 2 is suitable for the Free Hobby tier of E2B with 8 GPUs used for training."
        },
    )

    dataset_prompt_column: str = field(
        default="prompt",
        metadata={"help": "Column to use as prompts for training."},
    )

    e2b_router_url: Optional[str] = field(
        default=None,
        metadata={"help": "URL for the E2B router. See scripts/e2b_router.py"},
    )

    morph_router_url: Optional[str] = field(
        default=None,
        metadata={"help": "URL for the MorphCloud router. See scripts/morph_router.py"},
    )

    code_provider: Optional[str] = field(
        default="e2b",
        metadata={
            "help": "Provider for code execution. Options: 'e2b', 'local', 'morph'.",
            "choices": ["e2b", "local", "morph"],
        },
    )

    ioi_provider: Optional[str] = field(
        default="piston",
        metadata={
            "help": "Provider for IOI code execution. Options: 'piston', 'morph'.",
            "choices": ["piston", "morph"],
        },
    )

    max_completion_len: int = field(
        default=16384,
        metadata={"help": "Maximum number of characters in completion."},
    )
    soft_punish_cache: int = field(
        default=4096,
        metadata={"help": "Minimum number of characters in completion."},
    )
