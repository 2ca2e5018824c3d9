# code cells of examples/notebooks/grpo_rnj_1_instruct.ipynb at TRL v0.26.0 (verbatim, in order)

!pip install -Uq "trl[peft]" bitsandbytes trackio math_verify

# ---- next cell ----
from huggingface_hub import notebook_login

notebook_login()

# ---- next cell ----
from datasets import load_dataset

dataset_id = 'AI-MO/NuminaMath-TIR'
train_dataset = load_dataset(dataset_id, split='train[:5%]')

# ---- next cell ----
SYSTEM_PROMPT = """A conversation between User and Assistant. The user asks a question, and the Assistant solves it.
The assistant first thinks about the reasoning process in the mind and then provides the user with the answer.
The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags.
Use exactly one <think>...</think> block followed by exactly one <answer>...</answer> block.

Examples:

User: What is 2 + 2?
Assistant:
<think>
I will add 2 and 2 together.
</think>
<answer>4</answer>

User: What is 3 × 5?
Assistant:
<think>
I will multiply 3 by 5.
</think>
<answer>15</answer>

User: Find the GCD of 12 and 18.
Assistant:
<think>
I will list the divisors of 12 and 18 and find the greatest one they have in common.
</think>
<answer>6</answer>
"""

def make_conversation(example):
    return {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": example["problem"]},
        ],
    }

train_dataset = train_dataset.map(make_conversation)

# ---- next cell ----
print(train_dataset[0])

# ---- next cell ----
train_dataset = train_dataset.remove_columns(['messages', 'problem'])
print(train_dataset)

# ---- next cell ----
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
import torch

model_name = "EssentialAI/rnj-1-instruct"

model = AutoModelForCausalLM.from_pretrained(
    model_name,
    dtype="auto",
    device_map="auto",
    quantization_config=BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_use_double_quant=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.float16
    ),
)

# ---- next cell ----
from peft import LoraConfig

# You may need to update `target_modules` depending on the architecture of your chosen model.
# For example, different LLMs might have different attention/projection layer names.
peft_config = LoraConfig(
    r=32,
    lora_alpha=32,
    target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",],
)


# ---- next cell ----
import re

def format_reward(completions, **kwargs):
    """Reward function that checks if the reasoning process is enclosed within <think> and </think> tags, while the final answer is enclosed within <answer> and </answer> tags."""
    pattern = r"<think>.*?</think>.*?<answer>.*?</answer>"

    matches = []
    for item in completions:
        if isinstance(item, list):
            text = item[0]['content']
        else:
            text = item
        match = re.match(pattern, text, re.DOTALL | re.MULTILINE)
        matches.append(match)

    return [1.0 if match else 0.0 for match in matches]

# ---- next cell ----
from trl import GRPOConfig

output_dir = "EssentialAI-rnj-1-instruct-trl-grpo"

# Configure training arguments using GRPOConfig
training_args = GRPOConfig(
    learning_rate=2e-5,                                   # Learning rate used during traing
    num_train_epochs=1,                                   # Number of full dataset passes. For testing, use `max_steps` instead
    #max_steps=100,

    # Parameters that control the data preprocessing
    per_device_train_batch_size=8,
    max_completion_length=256, # default: 256             # Max completion length produced during training
    num_generations=8, # default: 8                       # Number of generations produced during trainig for comparison
    max_prompt_length=512,  # default: 512                # Max prompt lenght of the input prompt used for generation during training

    # Parameters related to reporting and saving
    output_dir=output_dir,                                # Where to save model checkpoints and logs
    logging_steps=10,                                     # Log training metrics every N steps
    report_to="trackio",                                  # Experiment tracking tool
    trackio_space_id = output_dir,                        # HF Space where you trackio will be

    # Hub integration
    push_to_hub=True,                                     # Push the resulted model to the Hub
    log_completions=True,                                 # Log completions during training
)

# ---- next cell ----
from trl import GRPOTrainer

trainer = GRPOTrainer(
    model=model,
    reward_funcs=[format_reward],
    args=training_args,
    train_dataset=train_dataset,
    peft_config=peft_config,
)

# ---- next cell ----
gpu_stats = torch.cuda.get_device_properties(0)
start_gpu_memory = round(torch.cuda.max_memory_reserved() / 1024 / 1024 / 1024, 3)
max_memory = round(gpu_stats.total_memory / 1024 / 1024 / 1024, 3)

print(f"GPU = {gpu_stats.name}. Max memory = {max_memory} GB.")
print(f"{start_gpu_memory} GB of memory reserved.")

# ---- next cell ----
trainer_stats = trainer.train()

# ---- next cell ----
used_memory = round(torch.cuda.max_memory_reserved() / 1024 / 1024 / 1024, 3)
used_memory_for_lora = round(used_memory - start_gpu_memory, 3)
used_percentage = round(used_memory / max_memory * 100, 3)
lora_percentage = round(used_memory_for_lora / max_memory * 100, 3)

print(f"{trainer_stats.metrics['train_runtime']} seconds used for training.")
print(f"{round(trainer_stats.metrics['train_runtime']/60, 2)} minutes used for training.")
print(f"Peak reserved memory = {used_memory} GB.")
print(f"Peak reserved memory for training = {used_memory_for_lora} GB.")
print(f"Peak reserved memory % of max memory = {used_percentage} %.")
print(f"Peak reserved memory for training % of max memory = {lora_percentage} %.")

# ---- next cell ----
trainer.save_model(output_dir)
trainer.push_to_hub(dataset_name=dataset_id)

# ---- next cell ----
output_dir = 'sergiopaniego/EssentialAI-rnj-1-instruct-trl-grpo'
model_name = "EssentialAI/rnj-1-instruct"

# ---- next cell ----
from transformers import AutoModelForCausalLM, AutoTokenizer
from peft import PeftModel

base_model = model_name
adapter_model = f"{output_dir}" # Replace with your HF username or organization

model = AutoModelForCausalLM.from_pretrained(base_model, dtype="auto", device_map="auto")
model = PeftModel.from_pretrained(model, adapter_model)

tokenizer = AutoTokenizer.from_pretrained(base_model)

# ---- next cell ----
train_dataset[0]

# ---- next cell ----
from datasets import load_dataset

dataset_id = 'AI-MO/NuminaMath-TIR'
train_dataset = load_dataset(dataset_id, split='train[:5%]')

problem = train_dataset[0]['problem']

messages = [
    {
        "role": "system", "content": [
            {"type": "text", "text": SYSTEM_PROMPT}
        ]
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": problem},
        ],
    },
]

# ---- next cell ----
messages

# ---- next cell ----
input_ids = tokenizer.apply_chat_template(
    messages,
    add_generation_prompt=True,
    return_tensors="pt"
).to(model.device)

# --- Generate Prediction --- #
print("Generating prediction...")
output_ids = model.generate(
    input_ids,
    max_new_tokens=50,
    pad_token_id=tokenizer.eos_token_id,
    do_sample=True,
    temperature=0.2,
    top_p=0.95
)

response = tokenizer.decode(output_ids[0][input_ids.shape[-1]:], skip_special_tokens=True)
print(response)
