pip install vllm
# ---- next cell ----
%pip install trl datasets
# ---- next cell ----
import re                  # Regular expressions for pattern matching/text processing
import torch              # PyTorch for deep learning operations
from datasets import load_dataset, Dataset    # Data handling
from transformers import AutoTokenizer, AutoModelForCausalLM  # Model loading
from trl import GRPOConfig, GRPOTrainer      # RL training components

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
# ---- next cell ----
# Function to extract the answer from XML-formatted text
def extract_xml_answer(text: str) -> str:
    """
    Extracts the answer from text formatted with XML tags.

    Args:
        text (str): Input text containing <answer> tags

    Returns:
        str: The cleaned answer text between <answer> tags

    Example:
        Input: "<reasoning>some steps</reasoning><answer>42</answer>"
        Output: "42"
    """
    # Split on <answer> tag and take the last part (everything after the tag)
    answer = text.split("<answer>")[-1]
    # Split on </answer> tag and take the first part (everything before the closing tag)
    answer = answer.split("</answer>")[0]
    # Remove any leading/trailing whitespace and return
    return answer.strip()

# Function to extract answers from GSM8K dataset format
def extract_hash_answer(text: str) -> str | None:
    """
    Extracts the answer from GSM8K dataset format which uses #### as delimiter.

    Args:
        text (str): Input text containing #### delimiter

    Returns:
        str | None: The answer after #### or None if delimiter not found

    Example:
        Input: "Let's solve... #### 42"
        Output: "42"
    """
    # Check if the text contains the GSM8K answer delimiter
    if "####" not in text:
        return None
    # Split on #### and take everything after it, then clean whitespace
    return text.split("####")[1].strip()

# Function to load and format GSM8K dataset
def get_gsm8k_questions(split = "train") -> Dataset:
    """
    Loads and preprocesses the GSM8K dataset into a format suitable for GRPO training.

    Args:
        split (str): Dataset split to use ('train' or 'test')

    Returns:
        Dataset: Processed dataset with prompts and answers

    Note:
        # type: ignore comments are used to suppress mypy type checking warnings
    """
    # Load the GSM8K dataset from HuggingFace hub
    data = load_dataset('openai/gsm8k', 'main')[split] # type: ignore

    # Transform each example in the dataset
    data = data.map(lambda x: { # type: ignore
        # Create a prompt list with system instruction and user question
        'prompt': [
            # System message containing format instructions
            {'role': 'system', 'content': SYSTEM_PROMPT},
            # User message containing the actual math question
            {'role': 'user', 'content': x['question']}
        ],
        # Extract and store the answer from the GSM8K format
        'answer': extract_hash_answer(x['answer'])
    }) # type: ignore

    return data # type: ignore

# Load the training dataset
dataset = get_gsm8k_questions()
# ---- next cell ----
# Reward functions
def correctness_reward_func(prompts, completions, answer, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    q = prompts[0][-1]['content']
    extracted_responses = [extract_xml_answer(r) for r in responses]
    print('-'*20, f"Question:\n{q}", f"\nAnswer:\n{answer[0]}", f"\nResponse:\n{responses[0]}", f"\nExtracted:\n{extracted_responses[0]}")
    return [2.0 if r == a else 0.0 for r, a in zip(extracted_responses, answer)]

def int_reward_func(completions, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    extracted_responses = [extract_xml_answer(r) for r in responses]
    return [0.5 if r.isdigit() else 0.0 for r in extracted_responses]

def strict_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
    return [0.5 if match else 0.0 for match in matches]

def soft_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
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
    contents = [completion[0]["content"] for completion in completions]
    return [count_xml(c) for c in contents]
# ---- next cell ----
%pip install wandb
# ---- next cell ----
import wandb
wandb.login()
# ---- next cell ----
model_name = "Qwen/Qwen2.5-0.5B-Instruct"

output_dir="outputs/Qwen-0.5B-GRPO"
run_name="Qwen-0.5B-GRPO-gsm8k"

# Initialize wandb first
import wandb
wandb.init(
    project="qwen-math-grpo",
    entity="christian-cooper-us",
    config={
        "learning_rate": 5e-6,
        "adam_beta1": 0.9,
        "adam_beta2": 0.99,
        "weight_decay": 0.1,
        "warmup_ratio": 0.1,
        "batch_size": 1,
        "num_train_epochs": 1,
        "run_name": run_name
    }
)


training_args = GRPOConfig(
    output_dir=output_dir,
    run_name=run_name,
    learning_rate=5e-6,
    adam_beta1 = 0.9,
    adam_beta2 = 0.99,
    weight_decay = 0.1,
    warmup_ratio = 0.1,
    lr_scheduler_type='cosine',
    logging_steps=1,
    bf16=True,
    per_device_train_batch_size=1,
    gradient_accumulation_steps=4,
    num_generations=16,
    max_prompt_length=256,
    max_completion_length=200,
    num_train_epochs=1,
    save_steps=100,
    max_grad_norm=0.1,
    log_on_each_node=False,
    use_vllm=True,
    vllm_gpu_memory_utilization=.3,
    vllm_device="cuda:0",
    report_to="wandb", #wandb is enabled.
)

model = AutoModelForCausalLM.from_pretrained(
    model_name,
    torch_dtype=torch.bfloat16,
    device_map=None
).to("cuda")

tokenizer = AutoTokenizer.from_pretrained(model_name)
tokenizer.pad_token = tokenizer.eos_token
# ---- next cell ----
# use peft at your own risk; not working for me with multi-GPU training
trainer = GRPOTrainer(
    model=model,
    processing_class=tokenizer,
    reward_funcs=[
        xmlcount_reward_func,
        soft_format_reward_func,
        strict_format_reward_func,
        int_reward_func,
        correctness_reward_func],
    args=training_args,
    train_dataset=dataset,
    #peft_config=peft_config
)
trainer.train()
# ---- next cell ----
# Import necessary libraries
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# First, load the base model architecture
base_model = "Qwen/Qwen2.5-0.5B-Instruct"
model = AutoModelForCausalLM.from_pretrained(
    base_model,
    torch_dtype=torch.bfloat16,
    device_map="auto",
    trust_remote_code=True
)

# Load the fine-tuned weights
checkpoint_path = "outputs/Qwen-0.5B-GRPO/checkpoint-1868"  # Specific checkpoint folder
model = AutoModelForCausalLM.from_pretrained(
    checkpoint_path,
    torch_dtype=torch.bfloat16,
    device_map="auto",
    trust_remote_code=True
)

tokenizer = AutoTokenizer.from_pretrained(
    checkpoint_path,
    trust_remote_code=True
)

# Rest of the inference code remains the same
SYSTEM_PROMPT = """
Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>
"""

def solve_math_problem(question: str):
    prompt = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question}
    ]

    input_text = tokenizer.apply_chat_template(
        prompt,
        tokenize=False,
        add_generation_prompt=True
    )

    inputs = tokenizer(input_text, return_tensors="pt").to(model.device)
    outputs = model.generate(
        **inputs,
        max_new_tokens=200,
        temperature=0.9,
        num_return_sequences=1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id
    )

    response = tokenizer.decode(outputs[0], skip_special_tokens=True)
    return response

# Test with a sample problem
test_question = "A concrete factory makes cookies in batches of 124. If they need to make 1440 cookies for a large order and each batch takes 75 minutes to bake, how many hours will it take to complete the order if they can only bake one batch at a time?"
print("\nQuestion:", test_question)
print("\nResponse:", solve_math_problem(test_question))
# ---- next cell ----
%zip -r /content/model_checkpoint.zip /content/outputs/Qwen-0.5B-GRPO/checkpoint-1868
# ---- next cell ----
from google.colab import drive
drive.mount('/content/drive')

# Copy to Drive
%cp -r /content/outputs/Qwen-0.5B-GRPO/checkpoint-1868 /content/drive/MyDrive/my_models/
# ---- next cell ----
%git config --global credential.helper store
%pip install huggingface-hub
%huggingface-cli login
# ---- next cell ----
from transformers import AutoTokenizer, AutoModelForCausalLM

# Load from your local checkpoint

tokenizer = AutoTokenizer.from_pretrained("/content/outputs/Qwen-0.5B-GRPO/checkpoint-1868")
model = AutoModelForCausalLM.from_pretrained("/content/outputs/Qwen-0.5B-GRPO/checkpoint-1868")

# Push to Hub (replace "username/your-model-name" with your repo name but this is how i set mine up)
model.push_to_hub("HarleyCooper/GRPOtuned2")
tokenizer.push_to_hub("HarleyCooper/GRPOtuned2")

