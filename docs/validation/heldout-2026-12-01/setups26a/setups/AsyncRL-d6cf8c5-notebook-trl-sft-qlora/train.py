!pip install torch
!pip install datasets
!pip install transformers
!pip install peft
!pip install trl
!pip install accelerate
!pip install bitsandbytes
# ---- next cell ----
import os, random, torch

# Use GPU and disable TF imports
os.environ["USE_TF"] = "0"
os.environ["TRANSFORMERS_NO_TF"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0")

print("CUDA available:", torch.cuda.is_available())

from datasets import load_dataset
from transformers import (
    AutoConfig, AutoTokenizer, AutoModelForCausalLM,
    BitsAndBytesConfig, TrainingArguments, pipeline
)
from peft import LoraConfig, get_peft_model
from trl import SFTTrainer
# ---- next cell ----
model_name = "Qwen/Qwen3-4B-Thinking-2507"
dataset_name = "open-thoughts/OpenThoughts-114k"

seed = 42
random.seed(seed); torch.manual_seed(seed)

# QLoRA; set to None to run full-precision LoRA instead
bnb_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_use_double_quant=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=torch.bfloat16 if torch.cuda.is_available() else None,
)

# ---- next cell ----
ds = load_dataset(dataset_name)
# ---- next cell ----
ds
# ---- next cell ----
def replace_custom_tokens(text: str) -> str:
    return (text
        .replace("<|begin_of_thought|>", "<think>")
        .replace("<|end_of_thought|>", "</think>")
        .replace("<|begin_of_solution|>", "<solution>")
        .replace("<|end_of_solution|>", "</solution>")
    )

def apply_replacements(example):
    convs = example.get("conversations") or []
    new_convs = []
    for c in convs:
        v = c.get("value", "")
        v = replace_custom_tokens(v)
        new_convs.append({**c, "value": v})
    example["conversations"] = new_convs
    if example.get("system"):
        example["system"] = replace_custom_tokens(example["system"])
    return example

ds = ds.map(apply_replacements)
# ---- next cell ----
def first_of_role(convs, role):
    for c in convs:
        if c.get("from") == role:
            return c.get("value", "").strip()
    return ""

def make_training_text(example):
    system = (example.get("system") or "").strip()
    convs  = example.get("conversations") or []
    user   = first_of_role(convs, "user")
    asst   = first_of_role(convs, "assistant")

    if not user or not asst:
        return None

    parts = []
    if system:
        parts.append(f"<|system|>\n{system}")
    parts.append(f"<|user|>\n{user}")
    parts.append(f"<|assistant|>\n{asst}")
    return {"text": "\n".join(parts)}

def format_split(split):
    return (
        split.map(make_training_text, remove_columns=split.column_names)
             .filter(lambda x: x is not None)
    )

train_formatted = format_split(ds["train"])
eval_formatted  = format_split(ds["validation"]) if "validation" in ds else train_formatted.select(range(min(2000, len(train_formatted))))

print("Sample formatted (first 600 chars):\n", train_formatted[0]["text"][:1300])
# ---- next cell ----
!pip install ninja packaging
!sudo apt-get update && sudo apt-get install -y build-essential
!pip install flash-attn --no-build-isolation

# ---- next cell ----
config = AutoConfig.from_pretrained(model_name, trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained(model_name, trust_remote_code=True, use_fast=False)
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token

model = AutoModelForCausalLM.from_pretrained(
    model_name,
    config=config,
    trust_remote_code=True,
    torch_dtype=torch.bfloat16 if torch.cuda.is_available() else None,
    device_map="auto",
    quantization_config=bnb_config, 
    attn_implementation="flash_attention_2"
)
model.config.use_cache = False
model.generation_config.pad_token_id = tokenizer.pad_token_id
# ---- next cell ----
model
# ---- next cell ----
from trl import SFTTrainer, SFTConfig

# ---- next cell ----

# ---- LoRA: lighter + attention-only ----
from peft import LoraConfig
peft_config = LoraConfig(
    r=8,
    lora_alpha=16,
    lora_dropout=0.1,
    bias="none",
    task_type="CAUSAL_LM",
    target_modules=["q_proj","k_proj","v_proj","o_proj"]  # attention only
)

# ---- SFTConfig: OOM-safe knobs ----
from trl import SFTConfig, SFTTrainer

sft_config = SFTConfig(
    output_dir="./GeneratorFS/qwen3-4b-thinking-openthoughts-lora",
    dataset_text_field="text",
    max_length=512,                 # shorter to cut activations
    packing=False,                  # turn on later after FA2 confirmed
    per_device_train_batch_size=1,
    num_train_epochs=0.02,
    learning_rate=2e-4,
    bf16=False,                     # we’re using fp16 compute in 4-bit
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
    model_init_kwargs={
        "torch_dtype": torch.float16,
        "attn_implementation": "flash_attention_2",
        "quantization_config": bnb_config,
        "device_map": "auto",
        "low_cpu_mem_usage": True
    },
)

# ---- IMPORTANT: pass the MODEL NAME so model_init_kwargs APPLY ----
trainer = SFTTrainer(
    model="Qwen/Qwen3-4B-Thinking-2507",
    args=sft_config,
    train_dataset=train_formatted,    # <-- keep only train to save mem
    # eval_dataset=eval_formatted,    # <-- comment out to avoid eval-time OOM
    peft_config=peft_config,
)

# disable KV cache for training to save some mem
m = trainer.model
if hasattr(m, "config"):
    m.config.use_cache = False

trainer.train()
trainer.save_model("./GeneratorFS/qwen3-4b-thinking-openthoughts-lora")
# ---- next cell ----

# ---- next cell ----

