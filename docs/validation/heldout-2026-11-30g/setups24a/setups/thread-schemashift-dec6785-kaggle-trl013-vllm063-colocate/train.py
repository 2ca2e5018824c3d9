# Install deps
!pip install -q unsloth trl==0.13.0 vllm==0.6.3
!pip install -q httpx pydantic fastapi
!pip install -q openai  # action parser fallback
# ---- next cell ----
# Clone repo + install editable
import os
os.chdir("/kaggle/working")
!git clone https://github.com/Yashash4/SchemaShift.git || (cd SchemaShift && git pull)
os.chdir("/kaggle/working/SchemaShift")
!pip install -e .
# ---- next cell ----
# Env health check - fail fast if the HF Space is unreachable.
# Reads SCHEMASHIFT_URL from Kaggle secrets. If this cell raises, DO NOT proceed to training.
import os
from client import SchemaShiftEnvClient

SCHEMASHIFT_URL = os.getenv("SCHEMASHIFT_URL", "https://yashash045-schemashift.hf.space")
health_client = SchemaShiftEnvClient(base_url=SCHEMASHIFT_URL)
if not health_client.health():
    raise RuntimeError(
        f"Env at {SCHEMASHIFT_URL} is not responding to /health. "
        "Fix SCHEMASHIFT_URL secret or redeploy the Space before training."
    )
print(f"[OK] Env reachable at {SCHEMASHIFT_URL}")
tasks = health_client.list_tasks()
print(f"[OK] {len(tasks)} scenarios available: {[t['task_id'] for t in tasks]}")
health_client.close()

# ---- next cell ----
# Load Qwen 2.5 1.5B + LoRA adapter
from unsloth import FastLanguageModel
model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="Qwen/Qwen2.5-1.5B-Instruct",
    max_seq_length=3072,
    load_in_4bit=True,
    dtype=None,
)
model = FastLanguageModel.get_peft_model(
    model,
    r=16,
    lora_alpha=32,
    lora_dropout=0.0,
    target_modules=["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"],
)
print(f"Trainable params: {model.num_parameters(only_trainable=True):,}")
# ---- next cell ----
# Env client + reward function (variant-specific — uncomment ONE block)
import os, json, re
from client import SchemaShiftEnvClient
from models import Action, CompleteParams

SCHEMASHIFT_URL = os.getenv("SCHEMASHIFT_URL", "https://YOUR-SPACE.hf.space")
env_client = SchemaShiftEnvClient(base_url=SCHEMASHIFT_URL)


def parse_completion_to_actions(text: str) -> list[Action]:
    """Parse LLM output into a list of Actions. Graceful fallback on any failure."""
    # Strip common markdown code fences
    cleaned = re.sub(r"```(?:json)?\s*|\s*```", "", text)
    actions = []
    # Brace-balanced extractor (handles arbitrary nesting, unlike flat regex)
    depth = 0
    start = -1
    for i, ch in enumerate(cleaned):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start >= 0:
                chunk = cleaned[start:i + 1]
                try:
                    obj = json.loads(chunk)
                    actions.append(Action.model_validate(obj))
                except Exception:
                    pass
                start = -1
    if not actions:
        actions.append(Action(
            type="complete_task",
            complete=CompleteParams(summary="Parse error — no valid actions in output."),
        ))
    return actions


# --- ACCOUNT 1 (Yashash - STAGE 1 MAIN): shaped_total (rubric + dense + gates) ---
def reward_fn(prompts, completions, **kwargs):
    rewards = []
    for prompt, completion in zip(prompts, completions):
        actions = parse_completion_to_actions(completion)
        task_id = kwargs.get("task_id", "E1_onboard_new_hire")
        env_client.reset(task_id)
        total = 0.0
        for a in actions:
            obs, r = env_client.step(a)
            total += r.shaped_total
            if obs.done:
                break
        rewards.append(total)
    return rewards


# --- ACCOUNT 2 (Gajanand - Stage 2 parallel, shaped_total - same as Account 1) ---
# def reward_fn(prompts, completions, **kwargs):
#     rewards = []
#     for prompt, completion in zip(prompts, completions):
#         actions = parse_completion_to_actions(completion)
#         task_id = kwargs.get("task_id", "E1_onboard_new_hire")
#         env_client.reset(task_id)
#         total = 0.0
#         for a in actions:
#             obs, r = env_client.step(a)
#             total += r.shaped_total
#             if obs.done:
#                 break
#         rewards.append(total)
#     return rewards


# --- ACCOUNT 3 (Likith - curriculum ablation): shaped + procedural scheduler ---
# See procedural scheduler cell below. Rebuild dataset every ~25 training steps.
# Alternative for Account 3: swap Cell 4 (model load) to 'Qwen/Qwen2.5-Coder-1.5B-Instruct'.

# ---- next cell ----
# STAGE 1: skipped - uncomment for Account 3 Stage 2+ curriculum.
# (Defining this function has no runtime effect for Accounts 1 & 2; commenting
# to make the skip intent explicit.)

# Procedural drift scheduler (Account 3 only — comment out for Accounts 1 & 2)
# import random
# from copy import deepcopy
# from scenarios import SCENARIOS
# from models import DriftEvent


# def build_procedural_scenarios(step_count: int) -> dict:
#     """Curriculum-based drift variety that scales with training progress.

#     - Steps 0-50:   Original deterministic drifts (baseline)
#     - Steps 50-150: Permute drift steps (same drifts, shuffled timing)
#     - Steps 150+:   Add a secondary drift (harder, multi-drift episodes)
#     """
#     scenarios_out = {}
#     for task_id, scenario in SCENARIOS.items():
#         if scenario["difficulty"] != "easy":
#             scenarios_out[task_id] = scenario
#             continue

#         s = deepcopy(scenario)

#         if step_count < 50:
#             pass
#         elif step_count < 150:
#             max_step = s["max_steps"]
#             for d in s["drift_plan"]:
#                 d.fires_at_step = random.randint(1, max(1, max_step - 2))
#                 d.details["_fired"] = False
#         else:
#             if s["drift_plan"]:
#                 primary = s["drift_plan"][0]
#                 secondary_kinds = ["rate_limit_tightening", "error_code_remap"]
#                 secondary = DriftEvent(
#                     tool=primary.tool,
#                     endpoint=None,
#                     kind=random.choice(secondary_kinds),
#                     fires_at_step=min(s["max_steps"] - 1, primary.fires_at_step + 2),
#                     details={"_procedural": True},
#                 )
#                 s["drift_plan"].append(secondary)

#         scenarios_out[task_id] = s
#     return scenarios_out
# ---- next cell ----
# Prompt dataset builder
from scenarios import SCENARIOS


def build_prompts_dataset(scenarios_dict):
    prompts = []
    for task_id, scenario in scenarios_dict.items():
        prompt = f"""You are an autonomous workflow agent. Complete the task using tools.

TASK: {scenario['task_description']}

SUCCESS CRITERIA:
{chr(10).join(f'- {c}' for c in scenario['success_criteria'])}

AVAILABLE ACTIONS:
- call_tool(tool, endpoint, params) — call a tool
- inspect_schema(tool) — read current schema for a tool
- retry_with_variant(tool, endpoint, params) — retry a failed call with modified params
- report_drift(tool, drift_kind, description) — flag a drift you detected
- complete_task(summary) — end the episode

Output your next action as JSON. Example:
{{"type": "call_tool", "tool_call": {{"tool": "mail", "endpoint": "send_message", "params": {{"to": "x@y.com", "subject": "Hi", "body": "Hello"}}}}}}
"""
        prompts.append({"prompt": prompt, "task_id": task_id})
    return prompts


# Accounts 1 & 2 (deterministic scenarios):
train_dataset = build_prompts_dataset(SCENARIOS)
print(f"{len(train_dataset)} scenarios loaded")

# Account 3 (procedural — rebuild each training chunk):
# train_dataset = build_prompts_dataset(build_procedural_scenarios(step_count=0))
# ---- next cell ----
# GRPO config (Kaggle T4-friendly)
from trl import GRPOConfig, GRPOTrainer
from datasets import Dataset

config = GRPOConfig(
    output_dir="schemashift-grpo-kaggle",
    num_generations=4,
    max_completion_length=1536,
    per_device_train_batch_size=1,
    gradient_accumulation_steps=4,
    learning_rate=5e-6,
    logging_steps=5,
    save_steps=25,
    max_steps=100,
    report_to="none",
    use_vllm=True,
    vllm_mode="colocate",
    push_to_hub=True,
    hub_model_id=f"{os.getenv('HF_USERNAME', 'yashash045')}/schemashift-qwen15b-kaggle",
)

dataset = Dataset.from_list(train_dataset)
# ---- next cell ----
# Train
trainer = GRPOTrainer(
    model=model,
    args=config,
    reward_funcs=[reward_fn],
    train_dataset=dataset,
    processing_class=tokenizer,
)

# ABORT-EARLY CHECK: if first 5 logged rewards are all 0, STOP — reward is broken.
trainer.train()
# ---- next cell ----
# Save + push final checkpoint.
# (push_to_hub=True in GRPOConfig auto-pushes at save_steps intervals;
# this final explicit push captures state past the last save_step.)
trainer.save_model(config.output_dir)
trainer.push_to_hub(commit_message="Stage 1 final - Run 1 - Account 1")
print("Training complete. Final checkpoint saved locally and pushed to HF Hub.")

