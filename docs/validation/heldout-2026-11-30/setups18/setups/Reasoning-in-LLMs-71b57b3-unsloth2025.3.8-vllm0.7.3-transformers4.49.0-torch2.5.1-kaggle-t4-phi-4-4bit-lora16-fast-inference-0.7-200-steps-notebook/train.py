 %%capture
!pip install unsloth vllm
!pip install triton==3.1.0
!pip install -U pynvml

# ---- next cell ----
hp_model_name = "unsloth/Phi-4"
hp_dataset = 'gsm'
hp_max_steps = 200
hp_run_name = f"{hp_model_name.split('/')[1]}-{hp_dataset}-{hp_max_steps}-steps"


hp_lora_rank = 16
hp_max_comp_len = 200
hp_max_seq_len = 1024

# ---- next cell ----
from unsloth import FastLanguageModel, PatchFastRL
PatchFastRL("GRPO", FastLanguageModel)

# ---- next cell ----
from unsloth import is_bfloat16_supported
import torch
max_seq_length = hp_max_seq_len # Can increase for longer reasoning traces
lora_rank = hp_lora_rank # Larger rank = smarter, but slower

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name = hp_model_name,
    max_seq_length = max_seq_length,
    load_in_4bit = True, # False for LoRA 16bit
    fast_inference = True, # Enable vLLM fast inference
    max_lora_rank = lora_rank,
    gpu_memory_utilization = 0.7, # Reduce if out of memory
)

model = FastLanguageModel.get_peft_model(
    model,
    r = lora_rank, # Choose any number > 0 ! Suggested 8, 16, 32, 64, 128
    target_modules = [
        "q_proj", "k_proj", "v_proj", "o_proj",
        "gate_proj", "up_proj", "down_proj",
    ], # Remove QKVO if out of memory
    lora_alpha = lora_rank,
    use_gradient_checkpointing = "unsloth", # Enable long context finetuning
    random_state = 3407,
)

# ---- next cell ----
import re
from datasets import load_dataset, Dataset

# Load and prep dataset
SYSTEM_PROMPT = """
Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>
"""

XML_COT_FORMAT = """\
<reasoning>
{reasoning}
</reasoning>
<answer>
{answer}
</answer>
"""

def extract_xml_answer(text: str) -> str:
    answer = text.split("<answer>")[-1]
    answer = answer.split("</answer>")[0]
    return answer.strip()

def extract_hash_answer(text: str) -> str | None:
    if "####" not in text:
        return None
    return text.split("####")[1].strip()

# uncomment middle messages for 1-shot prompting
def get_gsm8k_questions(split="train") -> Dataset:
    data = load_dataset('openai/gsm8k', 'main')[split]  # type: ignore
    data = data.map(lambda x: {  # type: ignore
        'prompt': tokenizer.apply_chat_template([
            {'role': 'system', 'content': SYSTEM_PROMPT},
            {'role': 'user', 'content': x['question']}
        ], tokenize=False, continue_final_message=True),
        'question': x['question'],
        'answer': extract_hash_answer(x['answer'])
    })  # type: ignore
    return data  # type: ignore
    
dataset = get_gsm8k_questions()

# Reward functions
def correctness_reward_func(prompts, completions, answer, **kwargs) -> list[float]:
    # responses = [completion[0]['content'] for completion in completions]
    # q = prompts[0][-1]['content']
    extracted_responses = [extract_xml_answer(r) for r in completions]
    # print('-'*20, f"Question:\n{q}", f"\nAnswer:\n{answer[0]}", f"\nResponse:\n{responses[0]}", f"\nExtracted:\n{extracted_responses[0]}")
    return [2.0 if r == a else 0.0 for r, a in zip(extracted_responses, answer)]

def int_reward_func(completions, **kwargs) -> list[float]:
    extracted_responses = [extract_xml_answer(r) for r in completions]
    return [0.5 if r.isdigit() else 0.0 for r in extracted_responses]

def strict_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$"
    matches = [re.match(pattern, r) for r in completions]
    return [0.5 if match else 0.0 for match in matches]

def soft_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>"
    matches = [re.match(pattern, r) for r in completions]
    return [0.5 if match else 0.0 for match in matches]

def count_xml(text) -> float:
    count = 0.0
    if text.count("<reasoning>\n") == 1:
        count += 0.125
    if text.count("\n</reasoning>\n") == 1:
        count += 0.125
    if text.count("\n<answer>\n") == 1:
        count += 0.125
        count -= len(text.split("\n</answer>\n")[-1])*0.001
    if text.count("\n</answer>") == 1:
        count += 0.125
        count -= (len(text.split("\n</answer>")[-1]) - 1)*0.001
    return count

def xmlcount_reward_func(completions, **kwargs) -> list[float]:
    return [count_xml(c) for c in completions]

# ---- next cell ----
I = 1
def write_model_outputs_to_file(prompts, completions, answer, output_dir="model_outputs_text", **kwargs):
    global I
    try:
        os.makedirs(output_dir, exist_ok=True)
        filename = os.path.join(output_dir, f"output_{I}.txt")

        with open(filename, "w", encoding="utf-8") as file:
            for i, (p, c, a) in enumerate(zip(prompts, completions, answer), 1):
                file.write(f"Example {i}:\n")
                file.write("Prompt:\n")
                file.write(str(p).strip() + "\n")
                file.write("-" * 30 + "\n")
                file.write("Model Completion:\n")
                file.write(str(c).strip() + "\n")
                file.write("-" * 30 + "\n")
                file.write("Expected Answer:\n")
                file.write(str(a).strip() + "\n")
                file.write("=" * 50 + "\n\n")
        I += 1

    except Exception as e:
        print(f"Error writing to file: {e}")
        return None

    return 0

# ---- next cell ----
import wandb
import os

wandb.login(key='wandb_key')
os.environ["WANDB_PROJECT"] = "dsc_250_train"

# ---- next cell ----
from trl import GRPOConfig, GRPOTrainer
training_args = GRPOConfig(
    use_vllm = True, # use vLLM for fast inference!
    learning_rate = 5e-6,
    adam_beta1 = 0.9,
    adam_beta2 = 0.99,
    weight_decay = 0.1,
    warmup_ratio = 0.1,
    lr_scheduler_type = "cosine",
    optim = "paged_adamw_8bit",
    logging_steps = 1,
    bf16 = is_bfloat16_supported(),
    fp16 = not is_bfloat16_supported(),
    per_device_train_batch_size = 1,
    gradient_accumulation_steps = 1, # Increase to 4 for smoother training
    num_generations = 6, # Decrease if out of memory
    max_prompt_length = 256,
    max_completion_length = hp_max_comp_len,
    # num_train_epochs = 1, # Set to 1 for a full training run
    max_steps = hp_max_steps,
    save_steps = 250,
    max_grad_norm = 0.1,
    report_to = "wandb", # Can use Weights & Biases
    output_dir = hp_run_name + '_out',
    run_name = hp_run_name
)

# ---- next cell ----
import os
os.environ["TORCH_LOGS"] = "+dynamic"

trainer = GRPOTrainer(
    model = model,
    processing_class = tokenizer,
    reward_funcs = [
        xmlcount_reward_func,
        soft_format_reward_func,
        strict_format_reward_func,
        int_reward_func,
        correctness_reward_func,
        write_model_outputs_to_file
    ],
    args = training_args,
    train_dataset = dataset,
)
trainer.train()

# ---- next cell ----
saving_name = 'LightFury9/' + hp_run_name
trainer.push_to_hub( saving_name , token='hf_key')

# ---- next cell ----
model.save_lora("grpo_saved_lora")

# ---- next cell ----
# 
# Just LoRA adapters
if False: model.save_pretrained_merged("model", tokenizer, save_method = "lora",)
if False: model.push_to_hub_merged("hf/model", tokenizer, save_method = "lora", token = "hf_key")



# Merge to 16bit
# if False: model.save_pretrained_merged("model", tokenizer, save_method = "merged_16bit",)
# if False: model.push_to_hub_merged("hf/model", tokenizer, save_method = "merged_16bit", token = "")

# # Merge to 4bit
# if False: model.save_pretrained_merged("model", tokenizer, save_method = "merged_4bit",)
# if False: model.push_to_hub_merged("hf/model", tokenizer, save_method = "merged_4bit", token = "")
