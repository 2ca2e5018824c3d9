"""Training scripts shaped like TRL's OpenEnv examples (TRL 0.26-1.5,
examples/scripts/openenv/{wordle,catch,sudoku,echo}.py): argparse options of their own, spelled
with dashes, read in a function; GRPOConfig built in code from them and from literals. Written
here in envdoctor's own words: only the structure matters."""

WORDLE = '''\
"""Play a word game against an environment server."""
import argparse

from trl import GRPOConfig, GRPOTrainer


def cli() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="word game")
    p.add_argument("--model", type=str, default="Qwen/Qwen3-1.7B")
    p.add_argument("--env-url", type=str, default="https://example.invalid")
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--gradient-accumulation-steps", type=int, default=64)
    p.add_argument("--output-dir", type=str, default=None)
    p.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    p.add_argument("--vllm-server-url", type=str, default="http://localhost:8000")
    return p.parse_args()


def main() -> None:
    opts = cli()
    trainer = GRPOTrainer(
        model=opts.model,
        reward_funcs=[],
        args=GRPOConfig(
            output_dir=opts.output_dir or "out",
            use_vllm=True,
            vllm_mode=opts.vllm_mode,
            vllm_server_base_url=opts.vllm_server_url if opts.vllm_mode == "server" else None,
            num_generations=opts.num_generations,
            learning_rate=opts.learning_rate,
            gradient_accumulation_steps=opts.gradient_accumulation_steps,
            logging_steps=1,
            chat_template_kwargs={"enable_thinking": False},
        ),
    )
    trainer.train()


if __name__ == "__main__":
    main()
'''

CATCH = """\
import argparse
from trl import GRPOConfig, GRPOTrainer


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-host", type=str, default="0.0.0.0")
    parser.add_argument("--env-port", type=int, default=8001)
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    parser.add_argument("--vllm-server-url", type=str, default="http://localhost:8000")
    return parser.parse_args()


def main():
    args = parse_args()
    training_args = GRPOConfig(
        output_dir=f"{args.model.split('/')[-1]}-catch",
        use_vllm=True,
        vllm_mode=args.vllm_mode,
        vllm_server_base_url=args.vllm_server_url if args.vllm_mode == "server" else None,
        logging_steps=1,
        num_train_epochs=1,
        max_completion_length=4,
        gradient_accumulation_steps=4,
    )
    GRPOTrainer(model=args.model, reward_funcs=[], args=training_args).train()
"""

SUDOKU = """\
import argparse
from trl import GRPOConfig, GRPOTrainer


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    model = parser.add_argument_group("model")
    model.add_argument("--model-id", default="Qwen/Qwen3-1.7B")
    train = parser.add_argument_group("training")
    train.add_argument("--per-device-batch-size", type=int, default=1)
    train.add_argument("--num-generations", type=int, default=8)
    train.add_argument("--gradient-accumulation-steps", type=int, default=64)
    train.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, default=True)
    train.add_argument("--use-lora", action="store_true", default=False)
    vllm = parser.add_argument_group("vllm")
    vllm.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    vllm.add_argument("--vllm-server-url", type=str, default="http://localhost:8000")
    vllm.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.15)
    gen = parser.add_argument_group("generation")
    gen.add_argument("--top-p", type=float, default=None)
    return parser.parse_args()


def main():
    args = parse_args()
    cfg = GRPOConfig(
        use_vllm=True,
        vllm_mode=args.vllm_mode,
        vllm_server_base_url=args.vllm_server_url if args.vllm_mode == "server" else None,
        vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization or 0.2,
        per_device_train_batch_size=args.per_device_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        num_generations=args.num_generations,
        top_p=args.top_p,
        save_strategy="steps",
    )
    cfg.gradient_checkpointing = args.gradient_checkpointing
    GRPOTrainer(model=args.model_id, reward_funcs=[], args=cfg).train()
"""

ECHO = """\
import argparse

from trl import GRPOConfig, GRPOTrainer


def parse_args():
    parser = argparse.ArgumentParser(description="echo")
    parser.add_argument("--model", type=str, default="Qwen/Qwen3-0.6B")
    parser.add_argument("--env-host", type=str, default="https://example.invalid")
    return parser.parse_args()


def main():
    args = parse_args()
    trainer = GRPOTrainer(
        model=args.model,
        reward_funcs=[],
        args=GRPOConfig(
            chat_template_kwargs={"enable_thinking": False},
            log_completions=True,
            logging_steps=2,
            num_completions_to_print=1,
        ),
    )
    trainer.train()
"""

OPENENV = {"wordle": WORDLE, "catch": CATCH, "sudoku": SUDOKU, "echo": ECHO}


# HfArgumentParser / TrlParser scripts and open-r1's shape (huggingface/open-r1
# src/open_r1/grpo.py with src/open_r1/configs.py: a GRPOConfig subclass named GRPOConfig and
# GRPOScriptArguments, imported from the package).
HF_OWN_DATACLASS = """\
from dataclasses import dataclass, field
from typing import ClassVar

from transformers import HfArgumentParser
from trl import GRPOConfig


@dataclass
class RewardArgs:
    reward_scale: float = 1.0
    judge_model: str = field(default="none")
    registry: ClassVar[dict] = {}


def main():
    parser = HfArgumentParser((RewardArgs, GRPOConfig))
    reward_args, training_args = parser.parse_args_into_dataclasses()
"""

TRL_PARSER = """\
import dataclasses

import trl
from trl import ModelConfig, ScriptArguments, TrlParser


@dataclasses.dataclass
class MyScriptArguments(ScriptArguments):
    loss_weighting: str = "token"
    num_iterations: int = 1


if __name__ == "__main__":
    parser = TrlParser((MyScriptArguments, trl.GRPOConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
"""

OPEN_R1_CONFIGS = """\
from dataclasses import dataclass, field
from typing import Optional

import trl


@dataclass
class ScriptArguments(trl.ScriptArguments):
    dataset_mixture: Optional[dict] = field(default=None)


@dataclass
class GRPOConfig(trl.GRPOConfig):
    chat_template: Optional[str] = field(default=None)
    hub_model_revision: Optional[str] = field(default="main")
    system_prompt: Optional[str] = field(default=None)
    wandb_project: Optional[str] = field(default=None)


@dataclass
class GRPOScriptArguments(ScriptArguments):
    reward_funcs: list[str] = field(default_factory=lambda: ["accuracy"])
    cosine_max_len: int = field(default=1000)
"""

OPEN_R1_GRPO = """\
import sys

from open_r1.configs import GRPOConfig, GRPOScriptArguments
from trl import GRPOTrainer, ModelConfig, TrlParser


def main(script_args, training_args, model_args):
    pass


if __name__ == "__main__":
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
    main(*parser.parse_args_and_config())
"""

OPEN_R1_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
dataset_name: open-r1/OpenR1-Math-220k
use_vllm: true
num_generations: 8
per_device_train_batch_size: 8
hub_model_revision: v00.00
system_prompt: "You are a helpful assistant."
reward_funcs: [accuracy, format]
cosine_max_len: 1000
output_dir: data/out
"""
