# code cells of notebooks/en/grpo_vllm_online_training.ipynb at huggingface/cookbook 9a1d3a4a29ee4023fe46483ee0c846cadcdb1f44, verbatim, in notebook order (markdown and outputs dropped)
# %% [code cell]
!pip install -U -q trl[vllm] peft math_verify trackio transformers

# Tested with trl==0.23.1, peft==0.17.1, math_verify==0.8.0, vllm==0.11.0, trackio==0.5.2 transformers==4.57.0

# %% [code cell]
from huggingface_hub import notebook_login

notebook_login()

# %% [code cell]
from datasets import load_dataset

dataset_id = 'AI-MO/NuminaMath-TIR'
train_dataset, test_dataset = load_dataset(dataset_id, split=['train[:10%]', 'test[:10%]'])

# %% [code cell]
print(train_dataset)

# %% [code cell]
print(train_dataset[0])

# %% [code cell]
SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The assistant "
    "first thinks about the reasoning process in the mind and then provides the user with the answer. The reasoning "
    "process and answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., "
    "<think> reasoning process here </think><answer> answer here </answer>"
)

def make_conversation(example):
    return {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": example["problem"]},
        ],
    }

train_dataset = train_dataset.map(make_conversation)
test_dataset = test_dataset.map(make_conversation)

# %% [code cell]
print(train_dataset[0]['prompt'])

# %% [code cell]
train_dataset = train_dataset.remove_columns(['messages', 'problem'])
print(train_dataset)

# %% [code cell]
import torch
from transformers import AutoModelForCausalLM

model_id = "Qwen/Qwen2-0.5B-Instruct"
model = AutoModelForCausalLM.from_pretrained(
    model_id,
    dtype="auto",
    device_map="auto",
)
tokenizer = AutoTokenizer.from_pretrained(model_id)

# %% [code cell]
from peft import LoraConfig, get_peft_model

lora_config = LoraConfig(
    task_type="CAUSAL_LM",
    r=8,
    lora_alpha=32,
    lora_dropout=0.1,
    target_modules=["q_proj", "v_proj"],
)

model = get_peft_model(model, lora_config)

model.print_trainable_parameters()

# %% [code cell]
import re

def format_reward(completions, **kwargs):
    """Reward function that checks if the completion has a specific format."""
    pattern = r"^<think>.*?</think>\s*<answer>.*?</answer>$"
    completion_contents = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, content) for content in completion_contents]
    rewards_list = [1.0 if match else 0.0 for match in matches]
    return [1.0 if match else 0.0 for match in matches]

# %% [code cell]
from math_verify import LatexExtractionConfig, parse, verify

def accuracy_reward(completions, **kwargs):
    """Reward function that checks if the completion is the same as the ground truth."""
    solutions = kwargs['solution']
    completion_contents = [completion[0]["content"] for completion in completions]
    rewards = []
    for content, solution in zip(completion_contents, solutions):
        gold_parsed = parse(solution, extraction_mode="first_match", extraction_config=[LatexExtractionConfig()])
        answer_parsed = parse(content, extraction_mode="first_match", extraction_config=[LatexExtractionConfig()])
        if len(gold_parsed) != 0:
            try:
                rewards.append(float(verify(answer_parsed, gold_parsed)))
            except Exception:
                rewards.append(0.0)
        else:
            rewards.append(1.0)
    return rewards

# %% [code cell]
from trl import GRPOConfig

output_dir = "Qwen2-0-5B-GRPO-vllm-trl"

# Configure training arguments using GRPOConfig
training_args = GRPOConfig(
    output_dir=output_dir,
    learning_rate=1e-5,
    gradient_accumulation_steps=16,
    num_train_epochs=1,

    # Parameters that control de data preprocessing
    max_completion_length=512,  # default: 256
    num_generations=8,  # default: 8
    max_prompt_length=512,  # default: 512

    # Parameters related to reporting and saving
    report_to=["trackio"],
    project=output_dir, # For trackio
    trackio_space_id=f"sergiopaniego/{output_dir}", # For trackio
    push_to_hub=True,
    save_strategy="steps",
    save_steps=10,

    # Configure vLLM
    use_vllm=True,
    vllm_mode="colocate",
    # Some more params you can configure for vLLM with their defaults
    # vllm_model_impl='vllm',
    # vllm_enable_sleep_mode=False,
    # vllm_guided_decoding_regex=None,
    # vllm_server_base_url=None,
    # vllm_server_host='0.0.0.0',
    # vllm_server_port=8000,
    # vllm_server_timeout=240.0,
    # vllm_gpu_memory_utilization=0.3,
    # vllm_tensor_parallel_size=1
    # vllm_importance_sampling_correction=True,
    # vllm_importance_sampling_cap=2.0
)

# %% [code cell]
from trl import GRPOTrainer

trainer = GRPOTrainer(
    model=model,
    reward_funcs=[format_reward, accuracy_reward],
    args=training_args,
    train_dataset=train_dataset
)

# %% [code cell]
import logging
import warnings
from transformers import logging as transformers_logging

logging.basicConfig(level=logging.WARNING) # Set global logging level to WARNING
logging.getLogger("vllm").setLevel(logging.WARNING)  # Silence INFO logs from vLLM
transformers_logging.set_verbosity_warning() # Set Transformers logging to WARNING

# Ignore specific Python warnings
warnings.filterwarnings("ignore", category=UserWarning, module="torch.utils.checkpoint")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="jupyter_client.session")

# %% [code cell]
trainer.train()

# %% [code cell]
trainer.save_model(training_args.output_dir)
trainer.push_to_hub(dataset_name=dataset_id)

# %% [code cell]
from transformers import AutoModelForCausalLM, AutoTokenizer

model_id = "sergiopaniego/Qwen2-0-5B-GRPO-vllm-trl"
trained_model = AutoModelForCausalLM.from_pretrained(
    model_id,
    dtype="auto",
    device_map="auto",
)
trained_tokenizer = AutoTokenizer.from_pretrained(model_id)

# %% [code cell]
print(test_dataset['prompt'][0])

# %% [code cell]
import time
import torch

def generate_with_reasoning(model, tokenizer, prompt):
  # Build the prompt from the dataset
  text = tokenizer.apply_chat_template(
      prompt, tokenize=False, add_generation_prompt=True
  )
  # Tokenize and move to the same device as the model
  model_inputs = tokenizer([text], return_tensors="pt").to(model.device)

  # conduct text completion
  start_time = time.time()
  generated_ids = model.generate(
      **model_inputs,
      max_new_tokens=500
  )
  end_time = time.time()
  output_ids = generated_ids[0][len(model_inputs.input_ids[0]):].tolist()

  # Decode and extract model response
  generated_text = tokenizer.decode(output_ids, skip_special_tokens=True)

  # Get inference time
  inference_duration = end_time - start_time

  # Get number of generated tokens
  num_input_tokens = model_inputs['input_ids'].shape[1]
  num_generated_tokens = len(output_ids)

  return generated_text, inference_duration, num_generated_tokens

# %% [code cell]
prompt = test_dataset['prompt'][0]

generated_text, inference_duration, num_generated_tokens = generate_with_reasoning(trained_model, trained_tokenizer, prompt)
print('-- Trained model --')
print(generated_text)

generated_text, inference_duration, num_generated_tokens = generate_with_reasoning(model, tokenizer, prompt)
print('-- Base model --')
print(generated_text)

# %% [code cell]
print(f"Inference time: {inference_duration:.2f} seconds")
print(f"Generated tokens: {num_generated_tokens}")

