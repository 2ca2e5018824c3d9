# code cells of nbs/00_qwen2_5_0_5B_grpo_gsm8k.ipynb at tripathysagar/rlhf-gsm8k 2d934488913cd0b8c4ae25dbe28de5c2e3c80df9, concatenated in order (notebook stored verbatim alongside)

!pip install -qUU datasets trl wandb peft accelerate --upgrade

# ---- next cell ----
import torch
import regex as re
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer, GRPOConfig, GRPOTrainer
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from peft import LoraConfig, get_peft_model

# ---- next cell ----
model_name = "Qwen/Qwen2.5-0.5B-Instruct"
max_seq_length = 512

tokenizer = AutoTokenizer.from_pretrained(model_name)
model = AutoModelForCausalLM.from_pretrained(
    model_name,
    torch_dtype=torch.bfloat16,
    device_map="auto",
)
model.gradient_checkpointing_enable()

lora_config = LoraConfig(
    r=16,
    lora_alpha=32,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                     "gate_proj", "up_proj", "down_proj"],
    lora_dropout=0,
    bias="none",
    task_type="CAUSAL_LM",
)
model = get_peft_model(model, lora_config)

# ---- next cell ----
model.print_trainable_parameters()

# ---- next cell ----
def clean_gold_answer(answer_text):
    """Strip <<...>> annotations and reformat with 'The answer is: N.' ending."""
    parts = answer_text.split("####")
    reasoning = parts[0].strip()
    final_num = parts[1].strip() if len(parts) > 1 else ""
    reasoning = re.sub(r'<<.*?>>', '', reasoning)
    return f"{reasoning}\nThe answer is: {final_num}."

# Test it
test_ans = 'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72'
print(clean_gold_answer(test_ans))

# ---- next cell ----
SYSTEM_PROMPT = (
    "You are a helpful math assistant. Solve the problem step by step, "
    "then give your final answer as a single number on the last line in "
    """this exact format:\n\n        The answer is: {number}.\n        """
)

sft_size = 1024
sft_subset = load_dataset("openai/gsm8k", "main")["train"].shuffle(seed=42).select(range(sft_size))

def make_sft_example(ex):
    cleaned = clean_gold_answer(ex["answer"])
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": ex["question"]},
        {"role": "assistant", "content": cleaned},
    ]
    return {"messages": messages}

sft_ds = sft_subset.map(make_sft_example, remove_columns=sft_subset.column_names)
sft_ds

# ---- next cell ----
sft_config = SFTConfig(
    output_dir="sft_qwen_gsm8k",
    num_train_epochs=3,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=4,
    learning_rate=2e-4,  # higher LR for LoRA
    logging_steps=10,
    save_steps=100,
    report_to='none',
    max_length=256,

    lr_scheduler_type="cosine",
    warmup_ratio=0.1,
    bf16=True,
    fp16=False,
    dataset_text_field=None,
)

sft_trainer = SFTTrainer(
    model=model,
    args=sft_config,
    train_dataset=sft_ds,
    processing_class=tokenizer,
)

sft_trainer.train()

# ---- next cell ----
# Save merged model (LoRA weights folded into base) for GRPO
merged_model = model.merge_and_unload()
merged_model.save_pretrained("sft_qwen_merged")
tokenizer.save_pretrained("sft_qwen_merged")

del merged_model, sft_config, sft_trainer
torch.cuda.empty_cache()

# ---- next cell ----
def format_prompt(question):
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

# Quick test
model.eval()
prompt = format_prompt("If a bag has 5 red and 3 blue marbles, how many marbles are there in total?")
inputs = tokenizer(prompt, return_tensors="pt").to(model.device)
with torch.no_grad():
    out = model.generate(**inputs, max_new_tokens=256)
print(tokenizer.decode(out[0], skip_special_tokens=True))

# ---- next cell ----
ds = load_dataset("openai/gsm8k", "main")

def extract_gold(ex):
    return {"gold": ex["answer"].split("####")[-1].strip()}

ds = ds.map(extract_gold, remove_columns=["answer"])
ds = ds.rename_column("question", "prompt")

# Split test into eval + final test
split = ds["test"].train_test_split(test_size=0.5, seed=42)
ds["eval"] = split["train"]
ds["test"] = split["test"]

ds_rl = ds.map(lambda x: {"prompt": format_prompt(x["prompt"])})
ds_rl

# ---- next cell ----
def extract_answer(response):
    try:
        matches = re.findall(r'The answer is[:\s]*(\-?\d[\d,]*\.?\d*)', response, re.IGNORECASE)
        if matches:
            return int(float(matches[-1].replace(",", ""))), True
        nums = re.findall(r'\-?\d[\d,]*\.?\d*', response)
        if nums:
            return int(float(nums[-1].replace(",", ""))), False
    except Exception as e:
        print(f"[extract_answer error] response={response[:80]!r} err={e}")
    return None, False

assert extract_answer("The answer is: 72.") == (72, True)
assert extract_answer("ans : 42") == (42, False)
assert extract_answer("no numbers here") == (None, False)
print("✅ extract_answer tests passed")

# ---- next cell ----
def reward_fn(completions, **kwargs):
    golds = kwargs["gold"]
    rewards = []
    for comp, gold in zip(completions, golds):
        try:
            ans, has_fmt = extract_answer(comp)
            gold_int = int(float(gold.replace(",", "")))
            if ans == gold_int and has_fmt:
                rewards.append(8.0)
            elif ans == gold_int and not has_fmt:
                rewards.append(3.2)
            elif ans != gold_int and has_fmt:
                closeness = max(0, 1 - abs(ans - gold_int) / max(abs(gold_int), 1))
                rewards.append(1.6 + 1.2 * closeness)
            elif ans is not None:
                closeness = max(0, 1 - abs(ans - gold_int) / max(abs(gold_int), 1))
                rewards.append(1.2 * closeness)
            else:
                rewards.append(0.0)
        except Exception as e:
            print(f"[reward_fn error] gold={gold!r} comp={comp[:80]!r} err={e}")
            rewards.append(0.0)
    return rewards

# Quick test
print(reward_fn(
    ["The answer is: 72.", "the answer is 72", "Answer is 99.", "wrong"],
    gold=["72", "72", "72", "72"]
))

# ---- next cell ----
def reward_fn(completions, **kwargs):
    golds = kwargs["gold"]
    rewards = []
    for comp, gold in zip(completions, golds):
        try:
            ans, _ = extract_answer(comp)
            gold_int = int(float(gold.replace(",", "")))
            rewards.append(1.0 if ans == gold_int else 0.0)
        except Exception as e:
            print(f"[reward_fn error] gold={gold!r} comp={comp[:80]!r} err={e}")
            rewards.append(0.0)
    return rewards


# ---- next cell ----
from IPython.display import display, Markdown
from tqdm import tqdm

def perf_check(model, tokenizer):
    model.eval()
    tokenizer.padding_side = "left"

    correct, total = 0, 0
    results = []
    batch_size = 64
    table_rows = []

    test_data = list(ds_rl["test"])
    for i in tqdm(range(0, len(test_data), batch_size), desc="Evaluating"):
        batch = test_data[i:i+batch_size]
        prompts = [ex["prompt"] for ex in batch]
        golds = [int(float(ex["gold"].replace(",", ""))) for ex in batch]

        inputs = tokenizer(prompts, return_tensors="pt", padding=True).to(model.device)
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=256)

        for j, (ids, gold_int) in enumerate(zip(out, golds)):
            response = tokenizer.decode(ids[inputs["input_ids"].shape[-1]:], skip_special_tokens=True)
            ans, has_fmt = extract_answer(response)

            is_correct = (ans == gold_int)
            correct += int(is_correct)
            total += 1

            results.append({
                "gold": gold_int,
                "predicted": ans,
                "correct": is_correct,
                "response": response[:200],
            })
            table_rows.append(f"| {total} | {gold_int} | {ans} | {'✅' if is_correct else '❌'} | {response[:80].replace(chr(10), ' ')} |")

    print(f"\nFinal Accuracy: {correct}/{total} = {correct/total:.2%}")

    model.train()
    tokenizer.padding_side = "right"

    return table_rows

# ---- next cell ----
_ = perf_check(model, tokenizer)

# ---- next cell ----
# Load the merged SFT model, then apply fresh LoRA for GRPO
del model
torch.cuda.empty_cache()

tokenizer = AutoTokenizer.from_pretrained("sft_qwen_merged")
model = AutoModelForCausalLM.from_pretrained(
    "sft_qwen_merged",
    torch_dtype=torch.bfloat16,
    device_map="auto",
)
model.gradient_checkpointing_enable()

lora_config = LoraConfig(
    r=16,
    lora_alpha=32,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                     "gate_proj", "up_proj", "down_proj"],
    lora_dropout=0,
    bias="none",
    task_type="CAUSAL_LM",
)
model = get_peft_model(model, lora_config)

model.print_trainable_parameters()

# ---- next cell ----
import wandb

wandb.login()
wandb.init(project="grpo-gsm8k", name="grpo-qwen2.5-0.5B-lora")

# ---- next cell ----
class VibecheckCallback(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs:
            reward = logs.get('reward')
            completions = logs.get('completions')
            if reward is not None:
                print(f"Step {state.global_step} | reward: {reward:.3f}")
            if completions and len(completions) > 0:
                print(f"Step {state.global_step} | Sample:\n{completions[0][:200]}...")


config = GRPOConfig(
    output_dir="grpo_qwen_gsm8k",
    num_generations=8,
    max_completion_length=256,
    #num_train_epochs=1,
    max_steps=200,
    per_device_train_batch_size=4,
    gradient_accumulation_steps=4,
    learning_rate=5e-5,  # higher LR for LoRA
    logging_steps=10,
    report_to='wandb',
    beta=0.04,
    lr_scheduler_type="cosine",
    warmup_steps=20,
    weight_decay=0.01,
    eval_steps=50,
    save_steps=100,
    save_total_limit=2,
    bf16=True,
    fp16=False,
)


trainer = GRPOTrainer(
    model=model,
    reward_funcs=reward_fn,
    args=config,
    train_dataset=ds_rl["train"],
    processing_class=tokenizer,
    callbacks=[VibecheckCallback()],
)

trainer.train()

# ---- next cell ----
_ = perf_check(trainer.model, tokenizer)

# ---- next cell ----
def infer(model, tokenizer, prompt):
    model.eval()
    inputs = tokenizer(prompt, return_tensors="pt").to(model.device)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            max_new_tokens=256,
            do_sample=True,
            temperature=0.7,
            top_p=.9,
            pad_token_id=tokenizer.eos_token_id,
            use_cache=True
        )
    response = tokenizer.decode(out[0][inputs["input_ids"].shape[-1]:], skip_special_tokens=True)
    return response

# Test on a sample
[infer(trainer.model, tokenizer, ds_rl['eval'][0]['prompt']) for i in range(5)], ds_rl['eval'][0]['gold']

# ---- next cell ----
#merged_model = model.merge_and_unload()
#merged_model.save_pretrained("grpo_qwen_merged")
#tokenizer.save_pretrained("grpo_qwen_merged")

# Push merged model
#from huggingface_hub import HfApi
#api = HfApi()
#api.create_repo("tripathysagar/qwen2.5-0.5B-grpo-gsm8k", exist_ok=True)
#api.upload_folder(
#    folder_path="grpo_qwen_merged",
#    repo_id="tripathysagar/qwen2.5-0.5B-grpo-gsm8k",
#)
