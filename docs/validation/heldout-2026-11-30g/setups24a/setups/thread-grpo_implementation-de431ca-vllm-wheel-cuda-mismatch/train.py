import os
REPO = "GRPO_implementation"
if not os.path.isdir(REPO) and not os.path.isdir("code_rl_env"):
    !git clone -q https://github.com/sidd1196/GRPO_implementation.git
if os.path.isdir(REPO):
    %cd {REPO}
!git pull -q 2>/dev/null
!pip install -q -e ".[train,vllm]"
# Colab's base image ships an old torchao that the installed peft rejects; we don't use it
# (plain bf16 LoRA), so remove it to avoid an ImportError when building the LoRA policy.
!pip uninstall -q -y torchao 2>/dev/null
print("package installed")
# ---- next cell ----
from code_rl_env import load_mbpp

mbpp = load_mbpp(limit=180)
t = mbpp[0]
print("task_id   :", t.task_id)
print("entry pt  :", t.entry_point)
print("prompt    :", t.prompt)
print("tests     :", t.tests)
print(f"\nloaded {len(mbpp)} MBPP tasks")
# ---- next cell ----
from code_rl_env import TaskSpec, ExecutionVerifier

demo = TaskSpec(
    task_id="demo/double", prompt="Return x doubled.",
    tests=["assert f(2) == 4", "assert f(3) == 6", "assert f(0) == 0"],
    entry_point="f", source="demo",
)

v = ExecutionVerifier()
print("Correct solution:")
vr = v.verify("def f(x):\n    return x * 2", demo)
print(f"  passed {vr.n_passed}/{vr.n_total}  fraction={vr.fraction_passed:.2f}  all_passed={vr.all_passed}")

print("\nPartially-correct solution (x + 2):")
vr = v.verify("def f(x):\n    return x + 2", demo)
print(f"  passed {vr.n_passed}/{vr.n_total}  fraction={vr.fraction_passed:.2f}")
print("  feedback the model would see next turn:")
print("   ", vr.feedback().replace(chr(10), chr(10) + "    "))
# ---- next cell ----
from code_rl_env import default_rubric, dense_rubric

# A fully-correct solution that is wrapped in markdown fences (a common chat-model habit):
fenced_correct = "```python\ndef f(x):\n    return x * 2\n```"

for name, rubric in [("default (tests only)", default_rubric()), ("dense (tests+syntax+format)", dense_rubric())]:
    reward, vr, breakdown = rubric.score(fenced_correct, demo)
    print(f"{name:32s} reward={reward:.3f}  breakdown={ {k: round(v,2) for k,v in breakdown.items()} }")
print("\nThe dense rubric docks the fenced output on `format` even though all tests pass.")
# ---- next cell ----
from code_rl_env import CodeEnv

env = CodeEnv([demo], max_turns=3)
obs = env.reset(demo)
print("── TURN 0 — the model sees:")
print(obs.prompt_text)

print("\n── It submits a WRONG function:  def f(x): return x + 2")
sr = env.step("def f(x):\n    return x + 2")
print(f"   reward={sr.reward:.2f}  done={sr.done}  solved={sr.info['solved']}")

print("\n── TURN 1 — the env now shows the failure and asks for a fix:")
print(sr.observation.prompt_text)

print("\n── It submits the CORRECTED function:  def f(x): return x * 2")
sr = env.step("def f(x):\n    return x * 2")
print(f"   reward={sr.reward:.2f}  done={sr.done}  solved={sr.info['solved']}")
# ---- next cell ----
!pytest -q tests/
# ---- next cell ----
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from peft import LoraConfig, get_peft_model, TaskType
from code_rl_env import load_mbpp, load_humaneval, default_rubric
from train_grpo import GRPOConfig, run_grpo, evaluate

BASE_MODEL = "Qwen/Qwen2.5-Coder-1.5B-Instruct"
dtype = torch.bfloat16

tokenizer = AutoTokenizer.from_pretrained(BASE_MODEL)
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token
tokenizer.padding_side = "left"

rubric        = default_rubric()
tasks         = load_mbpp(limit=180)
train_tasks   = tasks[:150]
eval_mbpp     = tasks[150:180]          # in-distribution held-out
humaneval     = load_humaneval()        # transfer

def fresh_policy():
    m = AutoModelForCausalLM.from_pretrained(BASE_MODEL, torch_dtype=dtype, device_map="auto")
    lora = LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, lora_dropout=0.05,
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return get_peft_model(m, lora)

print(f"train={len(train_tasks)}  eval_mbpp={len(eval_mbpp)}  humaneval={len(humaneval)}")
# ---- next cell ----
base = AutoModelForCausalLM.from_pretrained(BASE_MODEL, torch_dtype=dtype, device_map="auto")
base_mbpp = evaluate(base, tokenizer, eval_mbpp, rubric)["pass@1"]
base_he   = evaluate(base, tokenizer, humaneval, rubric)["pass@1"]
print(f"BASE   MBPP(in-dist)={base_mbpp:.3f}   HumanEval(transfer)={base_he:.3f}")
del base; torch.cuda.empty_cache()
# ---- next cell ----
policy = fresh_policy()
ref = AutoModelForCausalLM.from_pretrained(BASE_MODEL, torch_dtype=dtype, device_map="auto")
for p in ref.parameters():
    p.requires_grad_(False)

grpo_cfg = GRPOConfig(microcoder=False, num_steps=200, G=4, max_turns=3,
                      kl_coeff=0.01, epsilon_low=0.2, epsilon_high=0.2, temperature=0.8,
                      backend="vllm")            # actor/learner split; "hf_batched" if vLLM unavailable
grpo_log = run_grpo(policy, tokenizer, train_tasks, grpo_cfg,
                    ref_model=ref, rubric=rubric, eval_tasks=eval_mbpp)

grpo_mbpp = evaluate(policy, tokenizer, eval_mbpp, rubric)["pass@1"]
grpo_he   = evaluate(policy, tokenizer, humaneval, rubric)["pass@1"]
print(f"GRPO   MBPP(in-dist)={grpo_mbpp:.3f}   HumanEval(transfer)={grpo_he:.3f}")
del policy, ref; torch.cuda.empty_cache()
# ---- next cell ----
mc_policy = fresh_policy()
mc_cfg = GRPOConfig(microcoder=True, num_steps=200, G=4, max_turns=3,
                    kl_coeff=0.0, epsilon_low=0.2, epsilon_high=0.5,
                    temp_stage1=0.7, temp_stage2=1.0, temp_switch_step=100,
                    mask_prob=0.3, repeat_check_len=128,
                    backend="vllm")
mc_log = run_grpo(mc_policy, tokenizer, train_tasks, mc_cfg,
                  ref_model=None, rubric=rubric, eval_tasks=eval_mbpp)

mc_mbpp = evaluate(mc_policy, tokenizer, eval_mbpp, rubric)["pass@1"]
mc_he   = evaluate(mc_policy, tokenizer, humaneval, rubric)["pass@1"]
print(f"MicroCoder-GRPO   MBPP(in-dist)={mc_mbpp:.3f}   HumanEval(transfer)={mc_he:.3f}")
# ---- next cell ----
print(f"{'Model':<20}{'MBPP (in-dist)':>16}{'HumanEval (transfer)':>22}")
print("-" * 58)
for name, m, h in [("Base", base_mbpp, base_he),
                   ("GRPO", grpo_mbpp, grpo_he),
                   ("MicroCoder-GRPO", mc_mbpp, mc_he)]:
    print(f"{name:<20}{m:>16.3f}{h:>22.3f}")
# ---- next cell ----
import matplotlib.pyplot as plt

fig, ax = plt.subplots(1, 3, figsize=(16, 4))
ax[0].plot(grpo_log["rewards"], label="GRPO", alpha=.8)
ax[0].plot(mc_log["rewards"], label="MicroCoder", alpha=.8)
ax[0].set_title("mean group reward"); ax[0].set_xlabel("step"); ax[0].legend()

ax[1].plot(grpo_log["solve_rate"], label="GRPO", alpha=.8)
ax[1].plot(mc_log["solve_rate"], label="MicroCoder", alpha=.8)
ax[1].set_title("group solve rate (any turn)"); ax[1].set_xlabel("step"); ax[1].legend()

ax[2].plot(grpo_log["mean_turns"], label="GRPO", alpha=.8)
ax[2].plot(mc_log["mean_turns"], label="MicroCoder", alpha=.8)
ax[2].set_title("mean turns to terminate"); ax[2].set_xlabel("step"); ax[2].legend()
plt.tight_layout(); plt.show()
