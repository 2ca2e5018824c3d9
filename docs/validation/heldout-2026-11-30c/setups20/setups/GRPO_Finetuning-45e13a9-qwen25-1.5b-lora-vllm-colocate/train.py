# Install and import required packages
!uv pip install -q datasets transformers torch peft accelerate bitsandbytes wandb huggingface_hub
!uv pip install -q "trl[vllm]" 
!uv pip install -q textstat nltk packaging

import torch
import json
import os
import wandb
import warnings
import numpy as np
import time
from datasets import Dataset, DatasetDict
from transformers import AutoTokenizer, BitsAndBytesConfig, AutoModelForCausalLM
from transformers import logging as transformers_logging
from huggingface_hub import login
from peft import LoraConfig, get_peft_model, PeftModel
from trl import GRPOConfig, GRPOTrainer
import re

# Suppress warnings for cleaner output
warnings.filterwarnings("ignore")
transformers_logging.set_verbosity_error()
os.environ["TOKENIZERS_PARALLELISM"] = "false"

print("🚀 Setup complete!")
print(f"PyTorch version: {torch.__version__}")
print(f"CUDA available: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    print(f"GPU: {torch.cuda.get_device_name(0)}")
    print(f"GPU Memory: {torch.cuda.get_device_properties(0).total_memory / 1e9:.1f} GB")

# ---- next cell ----
# Configuration
model_name = "KhushalM/Qwen2.5-1.5-SFT-Merged"
output_dir = "./grpo_vllm_results"
hub_model_id = "KhushalM/Qwen2.5-1.5B-GRPO-vLLM"

config = {
    "model": model_name,
    "task": "First Principles Explanations",
    "framework": "GRPO + vLLM",
    "learning_rate": 5e-5,
    "batch_size": 8,  # Optimized for A100
    "gradient_accumulation_steps": 8,
    "num_train_epochs": 3,  
    "num_generations": 4,
}

print("✅ Configuration loaded")
print(f"Training config: {config}")

# ---- next cell ----
# Login to Hugging Face and Weights & Biases
login(token=os.getenv("HF_TOKEN"))
wandb.login(key=os.getenv("WANDB_API_KEY"))

# Initialize wandb with verifiers-specific config
wandb.init(
    project="qwen2.5-1.5B-first-principles-RL-GRPO",
    config=config
)

print("Authentication completed!")
# ---- next cell ----
from datasets import Dataset, DatasetDict
import json

# Load structured dataset
print("📊 Loading raw dataset...")

with open("structured_dataset.json", "r") as f:
    raw_data = json.load(f)

print(f"✅ Loaded {len(raw_data)} samples")

# Standardized system prompt
SYSTEM_PROMPT = """You are an expert educator. Approach each question uniquely - sometimes start with a surprising fact, sometimes with a simple question, sometimes with a fundamental principle. Build understanding naturally without following a rigid formula.

CORE PRINCIPLES:
- Vary your opening approach each time
- Use analogies and examples that fit the specific topic
- Build from basics to complexity naturally
- Make your reasoning transparent
- End with an engaging question (but vary how you ask it)

AVOID: Starting every response the same way. Mix up your approach and be conversational. Keep under 256 words."""

# Convert each sample to new format
formatted_data = []
for item in raw_data:
    messages = item.get("messages", [])
    user_msg = next((m["content"] for m in messages if m["role"] == "user"), None)
    assistant_msg = next((m["content"] for m in messages if m["role"] == "assistant"), None)

    if user_msg and assistant_msg:
        formatted_data.append({
            "prompt": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_msg.strip()}
            ]
        })

# Train/test split
split_idx = int(0.9 * len(formatted_data))
train_dataset = Dataset.from_list(formatted_data[:split_idx])
eval_dataset = Dataset.from_list(formatted_data[split_idx:])
dataset = DatasetDict({'train': train_dataset, 'test': eval_dataset})

print(f"✅ Dataset ready with:")
print(f"   Train: {len(dataset['train'])}, Eval: {len(dataset['test'])}")

# Preview sample
print("\n🔍 Sample:")
print(json.dumps(dataset['train'][0], indent=2))

# ---- next cell ----
# Load model and tokenizer for GRPO training
print("🤖 Loading merged SFT model...")

# Load the merged SFT model directly (no quantization needed for GRPO)
model = AutoModelForCausalLM.from_pretrained(
    model_name,  # "/root/grpo/merged_sft_model"
    torch_dtype=torch.bfloat16,
    trust_remote_code=True,
    device_map="auto",
    low_cpu_mem_usage=True,
    use_cache=False,
)

# Load tokenizer from merged model
tokenizer = AutoTokenizer.from_pretrained(
    model_name,  # "/root/grpo/merged_sft_model"
    trust_remote_code=True
)
tokenizer.pad_token = tokenizer.eos_token
tokenizer.padding_side = "left"

print("✅ Merged SFT model loaded successfully")

# Add NEW LoRA adapters for GRPO training (on top of merged SFT)
from peft import LoraConfig, TaskType, get_peft_model

peft_config = LoraConfig(
    task_type=TaskType.CAUSAL_LM,
    inference_mode=False,
    r=16,  # NEW LoRA rank
    lora_alpha=32,
    lora_dropout=0.1,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
)

# Apply NEW LoRA adapters for GRPO
model = get_peft_model(model, peft_config)

trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
total_params = sum(p.numel() for p in model.parameters())

print(f"📊 Model Statistics:")
print(f"   Base Model: Merged SFT (contains your first principles training)")
print(f"   NEW LoRA Parameters: {trainable_params:,}")
print(f"   Total Parameters: {total_params:,}")
print(f"   Trainable: {(trainable_params/total_params)*100:.2f}%")
print(f"   LoRA Rank: {peft_config.r}")

# ---- next cell ----
import torch
from transformers import BitsAndBytesConfig, AutoModelForSequenceClassification, AutoTokenizer

class RewardScorer:
    def __init__(self, device = "cuda" if torch.cuda.is_available() else "cpu"):
        self.quantized_model = AutoModelForSequenceClassification.from_pretrained(
    "KhushalM/Qwen2.5-1.5-Feynman-Reward-Model",  # or local path
    device_map="auto",
    quantization_config=BitsAndBytesConfig(load_in_4bit=True)
)
        self.reward_tokenizer = AutoTokenizer.from_pretrained("KhushalM/Qwen2.5-1.5-Feynman-Reward-Model")
        self.device = device
        self.quantized_model.to(device)
        self.quantized_model.eval()

    def score(self, text, response = None):
        if response is not None:
            text = text.strip() + "\n" + response.strip()
        else:
            text = text.strip()
        
        inputs = self.reward_tokenizer(text, return_tensors="pt", truncation=True, padding=True, max_length=1024).to(self.device)
        with torch.no_grad():
            score = self.quantized_model(**inputs).logits.squeeze().item()
        return score
    
    def batch_score(self, texts, responses=None):
        if responses is not None:
            texts = [text.strip() + "\n" + response.strip() for text, response in zip(texts, responses)]
        else:
            texts = [text.strip() for text in texts]
        
        inputs = self.reward_tokenizer(texts, return_tensors="pt", truncation=True, padding=True, max_length=1024).to(self.device)
        with torch.no_grad():
            scores = self.quantized_model(**inputs).logits.squeeze().cpu().numpy()
        return scores.tolist()
# ---- next cell ----
# Setup GRPO training
print("🎯 Setting up GRPO training...")
scorer = RewardScorer()

def compute_penalties(completions):
    def check_length(text):
        return 0.1 * (len(text.split()) / 256)

    def repetition_penalty(text):
        tokens = text.lower().split()
        seen = set()
        penalty = 0.0
        for token in tokens:
            if token in seen:
                penalty += 1
            seen.add(token)
        return penalty / len(tokens) if tokens else 0.0

    return [check_length(text) + repetition_penalty(text) for text in completions]


def fp_reward(completions, **batch):
    try:
        # 🧼 Flatten completions into strings
        processed_completions = []
        for completion in completions:
            if isinstance(completion, list):
                text = " ".join(msg.get("content", "") for msg in completion)
            else:
                text = str(completion)
            processed_completions.append(text.strip())

        # 🎯 Get raw reward scores
        raw_rewards = scorer.batch_score(processed_completions)
        if isinstance(raw_rewards[0], list):  # sometimes you get nested
            raw_rewards = [r[0] for r in raw_rewards]

        # ➕ Apply penalties
        added_penalties = compute_penalties(processed_completions)
        raw_rewards = [r - p for r, p in zip(raw_rewards, added_penalties)]

        # 🔄 Scale rewards to [-1, 1]
        scaled_rewards = [np.tanh(2.0 * r - 1.0) for r in raw_rewards]

        # 🧪 Log to wandb
        if wandb.run:
            wandb.log({
                "reward/mean": np.mean(scaled_rewards),
                "reward/std": np.std(scaled_rewards),
                "reward/min": np.min(scaled_rewards),
                "reward/max": np.max(scaled_rewards),
                "reward/raw": raw_rewards,
                "reward/added_penalties": added_penalties,
                "reward_distribution": wandb.Histogram(scaled_rewards),
                "completions": processed_completions[:10]  # ✅ log generated samples
            })

        return scaled_rewards

    except Exception as e:
        print(f"Reward function error: {e}")
        return [0.0] * len(completions)


# ---- next cell ----
import os
os.environ.update({
    'RANK': '0',
    'LOCAL_RANK': '0', 
    'WORLD_SIZE': '1',
    'MASTER_ADDR': 'localhost',
    'MASTER_PORT': '12355'
})

# GRPO training configuration
training_args = GRPOConfig(
    run_name=f"Qwen2.5-1.5B-RL-GRPO",
    output_dir=output_dir,
    learning_rate=config["learning_rate"],
    per_device_train_batch_size=config["batch_size"],
    gradient_accumulation_steps=config["gradient_accumulation_steps"],
    num_train_epochs=config["num_train_epochs"],
    num_generations=config["num_generations"],
    max_completion_length=256,
    temperature=0.8,
    beta=0.1,
    epsilon=0.2,
    save_steps=25,
    eval_steps=100,
    warmup_steps=20,
    lr_scheduler_type="cosine",
    bf16=True,
    remove_unused_columns=False,
    report_to=['wandb'],
    logging_strategy="steps",
    logging_steps=15,
    
    
    # vLLM Configuration
    use_vllm=True,
    vllm_mode="colocate",
    vllm_gpu_memory_utilization=0.4,
    
    generation_kwargs={
        "temperature": 0.8,
        "top_p": 0.9,
        "max_tokens": 256,
        "stop": ["<|im_end|>", "<|im_start|>"],
    },
)

# Update training args
training_args.per_device_train_batch_size = 4
training_args.gradient_accumulation_steps = 16
training_args.push_to_hub = True
training_args.hub_model_id = hub_model_id
training_args.log_completions = True
training_args.log_rewards = True
# training_args.reload_dataloaders_every_n_epochs=1
# ---- next cell ----
print(torch.cuda.memory_allocated()/1e9, "GB allocated")
print(torch.cuda.memory_reserved()/1e9,  "GB reserved")
# ---- next cell ----
# Initialize and run GRPO training
print("🏋️ Initializing GRPO trainer...")

print("✅ Using curriculum datasets with progressive system prompts")

# Initialize GRPO trainer
trainer = GRPOTrainer(
    model=model,
    args=training_args,
    processing_class=tokenizer,
    train_dataset=train_dataset,
    eval_dataset=eval_dataset,
    reward_funcs=[fp_reward],
)

print("✅ Trainer initialized successfully")
print("🚀 Starting GRPO training...")

# Ensure model is in training mode
model.train()
torch.set_grad_enabled(True)

print("🚀 Starting GRPO training with curriculum system prompts...")
print("📊 Training will use:")
print(f"   - Policy model: {model_name} (for gradient updates)")
print(f"   - Curriculum: 5-stage progressive system prompts")
print(f"   - Stage 1: Strong Feynman-style guidance (includes 'Hello' greeting)")
print(f"   - Stage 5: Autonomous reasoning (no system prompt)")

# Start training
training_start_time = time.time()
trainer.train()
training_end_time = time.time()

training_duration = training_end_time - training_start_time
print(f"\n🎉 Training completed in {training_duration/60:.1f} minutes!")
# ---- next cell ----
# Save the trained model
print("💾 Saving trained model...")

final_model_path = f"{output_dir}/final_model"
trainer.save_model(final_model_path)
tokenizer.save_pretrained(final_model_path)

print(f"✅ Model saved to: {final_model_path}")

# Test the model with standard transformers first
print("\n🧪 Testing model with standard transformers...")

test_prompt = "How do Neural Networks work?"
inputs = tokenizer(test_prompt, return_tensors="pt").to(model.device)

with torch.no_grad():
    outputs = model.generate(
        **inputs, 
        max_new_tokens=256, 
        temperature=0.7,
        do_sample=True,
        pad_token_id=tokenizer.pad_token_id
    )

response = tokenizer.decode(outputs[0], skip_special_tokens=True)
response_only = response[len(test_prompt):].strip()

print(f"Standard Transformers Response:")
print(f"{response_only}")

# Score the response
score = reward_scorer.score(response_only)
print(f"\nResponse Quality Score: {score:.3f}")

# Finish WandB run
wandb.finish()
print("Training complete! Check your WandB dashboard for training metrics.")

import shutil
import os
from IPython.display import FileLink

# Path to your fine-tuned model folder
#final_model_path = "./grpo_vf_results"  # Update if your folder name is different

# Output ZIP file name
zip_name = "qwen2.5-1.5B-rl_grpo_finetuned"

# Create ZIP archive
shutil.make_archive(zip_name, 'zip', final_model_path)

# Display a download link (works in Jupyter)
zip_file = zip_name + ".zip"
if os.path.exists(zip_file):
    display(FileLink(zip_file))
    print("✅ Model zipped! Click the link above to download.")
else:
    print("❌ Failed to create ZIP file.")

# Clean up GPU memory before vLLM
del model, trainer
torch.cuda.empty_cache()
print("🧹 Cleaned up GPU memory for vLLM")

# ---- next cell ----
final_model_path = f"{output_dir}/final_model"
trainer.save_model(final_model_path)
tokenizer.save_pretrained(final_model_path)

print(f"Model saved to {final_model_path}")
print("Model files:")
!ls -la {final_model_path}
wandb.finish()
