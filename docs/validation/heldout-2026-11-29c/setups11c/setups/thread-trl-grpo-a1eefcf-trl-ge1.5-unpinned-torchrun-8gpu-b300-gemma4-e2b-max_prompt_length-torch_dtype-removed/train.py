"""
GRPO training for the AI-safety-guard task — CLI / torchrun launcher.

Uses TRL's standard parser (GuardArgs + GRPOConfig + ModelConfig), so every HF /
GRPO / LoRA flag is available on the command line, and it runs under torchrun for
multi-GPU. Launch via train.sh, or directly:

  python train_guard.py --model_name_or_path <path> --dataset_name <jsonl> \
      --num_generations 8 --per_device_train_batch_size 1 --gradient_accumulation_steps 8 \
      --learning_rate 1e-5 --num_train_epochs 3 --bf16 True --output_dir out --use_peft

B300 / Gemma 4: add  --native_thinking --think_open "<|channel>thought" \
      --think_close "<channel|>" --attn_implementation flash_attention_2
"""
from dataclasses import dataclass, field

from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser, get_peft_config

import reward as reward_mod
from reward import (build_reward_funcs, is_correct_verdict, get_completion_text,
                    extract_verdict)
from guard_data import get_guard_dataset


@dataclass
class GuardArgs:
    dataset_name: str = field(default="", metadata={"help": "JSONL path; empty = built-in toy set"})
    max_think_tokens: int = field(default=512, metadata={"help": "brevity normalizer"})
    brevity_weight: float = field(default=0.5, metadata={"help": "must stay < 1.0"})
    format_weight: float = 0.2
    wrong_answer_length_mode: str = field(default="shorter_better",
                                          metadata={"help": "shorter_better | longer_better"})
    think_open: str = "<think>"
    think_close: str = "</think>"
    native_thinking: bool = field(default=False, metadata={
        "help": "Gemma native thought channel: pre-render the prompt with "
                "enable_thinking=True and use the verbatim single-word output format"})
    dump_completions: bool = field(default=False, metadata={"help": "print completion[0] once (debug)"})


GUARD_BODY = (
    "# Role\n"
    "You are a sophisticated policy-based classification model acting as an AI Safety Filter.\n\n"
    "# Task\n"
    "Analyze a given Input (a user query or an LLM/Agent response) against a Policy "
    "(one or more policy sets) and decide whether the Input should be Blocked or Allowed.\n\n"
    "# Decision and Reasoning Process\n"
    "1. If it does NOT match the Block Condition: Allow.\n"
    "2. If it matches the Block Condition BUT also satisfies the Allow Condition: Allow.\n"
    "3. If it matches the Block Condition AND does NOT satisfy the Allow Condition: Block.\n"
    "4. For multiple policies, apply the above to each; violating one or more is a total Block.\n\n"
    "# Notion\n"
    "- If block/allow conditions are not explicit, read the whole policy, interpret which "
    "statements are block vs allow conditions, then decide.\n"
    "- Keep your internal reasoning brief and concise."
)
# Gemma 4 (native thinking): the post-channel output is genuinely one word.
GEMMA_OUTPUT_FORMAT = "\n\n# Output Format\nOutput only a single word: block or allow."


def toy_output_format(think_open: str, think_close: str) -> str:
    # Non-thinking models (e.g. Qwen) skip reasoning under a bare "one word"
    # instruction, so we elicit the think wrapper explicitly.
    return (
        f"\n\n# Output Format (IMPORTANT)\nYour reply MUST begin with {think_open}, then brief "
        f"reasoning, then {think_close}, then a single word: block or allow. Do not write the "
        f"verdict before {think_open}.\n"
        f"Example:\n{think_open} The input asks for public facts; no block condition applies. "
        f"{think_close} allow"
    )


def _render_policy_set(policies):
    items = "\n".join(f'<policy id="{i}">\n{p}\n</policy>' for i, p in enumerate(policies, 1))
    return f"<policy_set>\n{items}\n</policy_set>"


def build_dataset(tokenizer, ga: GuardArgs):
    ds = get_guard_dataset(ga.dataset_name or None)
    out_fmt = GEMMA_OUTPUT_FORMAT if ga.native_thinking else toy_output_format(ga.think_open, ga.think_close)

    def fmt(ex):
        user = (
            GUARD_BODY + out_fmt
            + "\n\n-----\n\nNow decide for the policy and input below.\n\n"
            + f"# Policy:\n{_render_policy_set(ex['policies'])}\n\n"
            + f"# Input:\n<input>\n{ex['input']}\n</input>\n\n# Final Answer:"
        )
        messages = [{"role": "user", "content": user}]
        if ga.native_thinking:
            # Pre-render so the system turn carries <|think|>. trl tokenizes prompt
            # strings with add_special_tokens=False, so no double BOS.
            prompt = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, enable_thinking=True)
            return {"prompt": prompt, "answer": ex["label"]}
        return {"prompt": messages, "answer": ex["label"]}  # conversational (toy)

    return ds.map(fmt, remove_columns=ds.column_names)


def main():
    guard_args, training_args, model_args = TrlParser(
        (GuardArgs, GRPOConfig, ModelConfig)
    ).parse_args_and_config()

    reward_mod.set_think_delimiters(guard_args.think_open, guard_args.think_close)

    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)

    correctness, brevity, fmt = build_reward_funcs(
        tokenizer=tokenizer,
        max_think_tokens=guard_args.max_think_tokens,
        wrong_answer_length_mode=guard_args.wrong_answer_length_mode,
        answer_key="answer",
        is_correct_fn=is_correct_verdict,
    )
    reward_funcs = [correctness, brevity, fmt]
    training_args.reward_weights = [1.0, guard_args.brevity_weight, guard_args.format_weight]

    if guard_args.dump_completions:
        _seen = []

        def debug_dump(prompts=None, completions=None, **kwargs):
            if not _seen:
                t = get_completion_text(completions[0])
                print("\n[DEBUG] completion[0]:", repr(t[:800]),
                      "-> verdict", extract_verdict(t), "\n", flush=True)
                _seen.append(1)
            return [0.0] * len(completions)

        reward_funcs.append(debug_dump)
        training_args.reward_weights.append(0.0)

    mik = {}
    if model_args.attn_implementation:
        mik["attn_implementation"] = model_args.attn_implementation
    if model_args.torch_dtype:
        mik["torch_dtype"] = model_args.torch_dtype
    training_args.model_init_kwargs = mik
    if training_args.gradient_checkpointing:
        training_args.gradient_checkpointing_kwargs = {"use_reentrant": False}

    peft_config = get_peft_config(model_args)
    if peft_config is not None and peft_config.target_modules == ["all-linear"]:
        peft_config.target_modules = "all-linear"   # peft wants the bare string

    trainer = GRPOTrainer(
        model=model_args.model_name_or_path,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=build_dataset(tokenizer, guard_args),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)


if __name__ == "__main__":
    main()
