"""CFG012's failure reproduced on the CPU: TRL's GRPOTrainer with a LoRA peft_config and
gradient_checkpointing on, reentrant checkpointing (gradient_checkpointing_kwargs unset), a tiny
Qwen2 built from a config (random weights, a word-level tokenizer made here: nothing downloaded).

    python repro.py [reentrant|nonreentrant|input-grads]

reentrant: the run as written (TRL < 0.16 fails in the first backward); nonreentrant:
gradient_checkpointing_kwargs={"use_reentrant": False}; input-grads: the same run with
trainer.model.enable_input_require_grads() called before train() (the dev case's fix commit).
"""

import sys
import tempfile

import torch
from datasets import Dataset
from peft import LoraConfig
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer, __version__ as trl_version

mode = sys.argv[1] if len(sys.argv) > 1 else "reentrant"
torch.manual_seed(0)
out = tempfile.mkdtemp()
words = ["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(61)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
tokenizer.save_pretrained(out)
cfg = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  pad_token_id=0, eos_token_id=1, bos_token_id=1, tie_word_embeddings=False)
Qwen2ForCausalLM(cfg).save_pretrained(out)
data = Dataset.from_dict({"prompt": [" ".join(f"w{(i + j) % 60}" for j in range(4)) for i in range(8)]})
args = GRPOConfig(
    output_dir=out, per_device_train_batch_size=2, num_generations=2, max_prompt_length=8,
    max_completion_length=4, max_steps=1, logging_steps=1, report_to="none", use_cpu=True,
    gradient_checkpointing=True, save_strategy="no",
    **({"gradient_checkpointing_kwargs": {"use_reentrant": False}} if mode == "nonreentrant" else {}),
)
trainer = GRPOTrainer(
    model=out, reward_funcs=[lambda completions, **_: [float(len(c)) for c in completions]], args=args,
    train_dataset=data, processing_class=tokenizer,
    peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
)
if mode == "input-grads":
    trainer.model.enable_input_require_grads()
lora = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
print(f"trl {trl_version}, mode {mode}: {len(lora)} trainable LoRA tensors")
before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
trainer.train()
moved = sum(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters() if n in before)
print(f"trained one step: {moved} of {len(before)} LoRA tensors changed")
