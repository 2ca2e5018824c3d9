"""Which kind of training the log shows: an online RL trainer that generates (GRPO, RLOO, PPO, online
DPO: ``grpo``), an offline one (SFT, DPO, KTO, ORPO, a reward model, Seq2SeqTrainer: ``offline``),
or neither said (None).

Read from what the run printed: class names (``UnslothSFTTrainer``, ``GRPOConfig``), trainer files of
the frames (``trl/trainer/dpo_trainer.py``), metric keys (``rewards/chosen`` is DPO's,
``completions/mean_length`` GRPO's), the script of the command line (``train_sft.py``), GRPO's own
settings (``num_generations``). Generation evidence wins where both show (an SFT warm start before a
GRPO stage). With nothing in the log, a config given to envdoctor (a GRPOConfig) says ``grpo``. The
kind decides which levers an answer may offer: ``num_generations`` and ``max_completion_length``
exist in a GRPO run only, and a TRL default is evidence only of a run TRL's GRPOConfig configured.
"""

from __future__ import annotations

import re

from envdoctor.triage.draft import Log

GRPO = "grpo"
OFFLINE = "offline"

_GRPO = re.compile(
    r"GRPOTrainer|GRPOConfig|RLOOTrainer|RLOOConfig|PPOTrainer|PPOConfig|OnlineDPOTrainer|NashMDTrainer"
    r"|XPOTrainer|(?:grpo|rloo|ppo|online_dpo)_trainer\.py|\bnum_generations\b"
    r"|\bvllm_gpu_memory_utilization\b|completions/mean_length|frac_reward_zero_std|\breward_std\b"
    r"|(?<![A-Za-z])(?:grpo|GRPO)(?![A-Za-z])|\bmain_ppo\b|\bactor_rollout_ref\b|\btrain_ppo\w*\.py"
)
_OFFLINE = re.compile(
    r"SFTTrainer|SFTConfig|(?<!Online)DPOTrainer|(?<!Online)DPOConfig|KTOTrainer|ORPOTrainer|CPOTrainer"
    r"|RewardTrainer|Seq2SeqTrainer|(?<![\w])(?:sft|dpo|kto|orpo|reward)_trainer\.py"
    r"|rewards/chosen|logps/chosen|(?<![\w-])\w*sft\w*\.py\b|\bswift (?:sft|pt)\b"
    r"|--stage[ =](?:sft|dpo|kto|rm|pt)\b|\bstage: ?(?:sft|dpo|kto|rm|pt)\b"
)
#: vLLM's own OpenAI server started on the log's command line (not TRL's ``trl vllm-serve``)
VLLM_SERVER = "vllm-server"
_VLLM_SERVER = re.compile(
    r"(?m)^\s*(?:\$ )?(?:\S*/)?(?:vllm serve\b|python3?(?:\.\d+)? -m vllm\.entrypoints\.openai\.api_server\b)"
)
_TRL = re.compile(r"\btrl\b|\w+Trainer\b")
#: what is read of a log that does not fit in its head: the lines around its matches
MAX_TEXT = 1 << 20


def _text(log: Log) -> str:
    if log.head:
        return log.head[:MAX_TEXT].decode("utf-8", "replace")
    parts: list[str] = []
    for ms in log.by_sig.values():
        for m in ms[:4]:
            parts.extend(m.context)
            parts.append(m.text)
    return "\n".join(parts)[:MAX_TEXT]


def kind_of(text: str) -> str | None:
    """``grpo``, ``offline`` or None: the training ``text`` (a log's lines) shows."""
    if _GRPO.search(text):
        return GRPO
    if _OFFLINE.search(text):
        return OFFLINE
    return None


def run_kind(log: Log) -> str | None:
    """The kind of training ``log``'s text shows (``oom.classify`` falls back on a config given)."""
    return kind_of(_text(log))


def program(log: Log) -> str | None:
    """``vllm-server`` where the log's command line starts vLLM's own OpenAI server and nothing of
    TRL (a trainer, ``trl``) shows: a request the server refused is the server's, not a trainer's."""
    text = _text(log)
    return VLLM_SERVER if _VLLM_SERVER.search(text) and not _TRL.search(text) else None
