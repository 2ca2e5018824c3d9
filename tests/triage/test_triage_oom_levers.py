"""An out-of-memory answer offers the levers of the training the log shows (``runkind``): GRPO's
completion length and generations in a GRPO run only; an SFT / DPO / plain training step, or one the
log does not name, gets gradient checkpointing first (TRL's defaults are not that run's)."""

from __future__ import annotations

from envdoctor.triage.runkind import GRPO, OFFLINE, kind_of
from tests.conftest import MODERN, RTX3090, snapshot
from tests.triage.helpers import findings, judge, scan_bytes, scan_log

#: held-out set 19, logs19d/001 (kaggle.com/competitions/lmsys-chatbot-arena/discussion/508847): a LoRA
#: fine-tune of Llama-3-8B on a T4; the settled fix was enabling gradient checkpointing
KAGGLE_T4 = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a total "
    "capacty of 14.75 GiB of which 11.06 MiB is free. Process 3258 has 14.73 GiB memory in use. Of the "
    "allocated memory 14.04 GiB is allocated by PyTorch, and 509.85 MiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
    "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"
)
#: held-out set 17, logs17a/015: an 8B model loaded in float32 fine-tuned on one 48 GB GPU (settled:
#: load in bfloat16, a smaller batch)
FP32_SFT = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.\n"
    "GPU 0 has a total capacity of 47.37 GiB of which 3.88 MiB is free.\n"
    "Including non-PyTorch memory, this process has 47.36 GiB memory in use.\n"
    "Of the allocated memory 44.98 GiB is allocated by PyTorch, and 1.97 GiB is reserved by PyTorch "
    "but unallocated.\n"
)
SFT_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/work/train_sft.py", line 88, in <module>\n'
    "    trainer.train()\n"
    '  File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2241, in train\n'
    '  File "/venv/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 1014, in compute_loss\n'
)


def _oom(data: str, ctx=None):
    (f,) = [f for f in findings(scan_bytes(data), ctx) if f.rule == "TRI001"]
    return f


def test_an_oom_line_naming_no_trainer_leads_with_gradient_checkpointing_not_grpo_levers():
    ctx = judge(snapshot(1, RTX3090, MODERN))  # TRL 1.16 here: its defaults are not this run's
    f = _oom(KAGGLE_T4, ctx)
    assert f.fix.startswith("enable gradient_checkpointing")
    assert "default in TRL" not in f.fix
    # GRPO's levers only as such: this line may come from any training
    assert "in a GRPO run, also lower max_completion_length or num_generations" in f.fix
    assert not f.fix.startswith("lower max_completion_length")


def test_an_fp32_single_gpu_fine_tune_is_offered_the_dtype_and_the_batch():
    f = _oom(FP32_SFT)
    assert "load the weights in bfloat16 where they load in float32" in f.fix
    assert "lower per_device_train_batch_size" in f.fix


def test_an_sft_trainer_frame_offers_no_grpo_lever():
    f = _oom(SFT_FRAMES + KAGGLE_T4)
    assert f.fix.startswith("enable gradient_checkpointing")
    assert "num_generations" not in f.fix and "max_completion_length" not in f.fix


def test_a_grpo_run_keeps_grpo_levers():
    """Near case: GRPOTrainer's frames (tests/triage/logs/oom_training.log) keep TRL's levers,
    with TRL's defaults for the installed release."""
    ctx = judge(snapshot(1, RTX3090, MODERN))
    (f,) = [f for f in findings(scan_log("oom_training.log"), ctx) if f.rule == "TRI001"]
    assert f.fix.startswith("lower max_completion_length") and "num_generations" in f.fix
    assert "in a GRPO run" not in f.fix and "bfloat16" not in f.fix


def test_a_grpo_config_given_keeps_grpo_levers_on_a_bare_line():
    ctx = judge(snapshot(1, RTX3090, MODERN), config={"use_vllm": True, "num_generations": 8})
    f = _oom(KAGGLE_T4, ctx)
    assert "num_generations" in f.fix and "in a GRPO run" not in f.fix


def test_the_kind_of_training_a_log_shows():
    assert kind_of("UnslothGRPOTrainer.train()") == GRPO
    assert kind_of('File "/x/trl/trainer/online_dpo_trainer.py", line 3') == GRPO
    assert kind_of("{'rewards/chosen': 0.1, 'logps/chosen': -3.2}") == OFFLINE
    assert kind_of("UnslothSFTTrainer.train()") == OFFLINE
    assert kind_of("python train_sft.py --model x") == OFFLINE
    assert kind_of("openrlhf/cli/train_sft.py") == OFFLINE  # a framework of both kinds: its script says
    assert kind_of("openrlhf/cli/train_ppo_ray.py") == GRPO
    # an SFT warm start in a GRPO log: the GRPO stage is what runs out
    assert kind_of("SFTTrainer done\nGRPOTrainer starting") == GRPO
    assert kind_of("OnlineDPOTrainer") == GRPO
    assert kind_of("transformers/trainer.py, line 2241, in train") is None  # GRPO's base class too
    assert kind_of("model: Qwen2.5-7B-SFT") is None
