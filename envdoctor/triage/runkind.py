"""Which kind of training the log shows: an online RL trainer that generates (GRPO, RLOO, PPO, online
DPO: ``grpo``), an offline one (SFT, DPO, KTO, ORPO, a reward model, Seq2SeqTrainer: ``offline``),
or neither said (None).

Read from what the run printed: class names (``UnslothSFTTrainer``, ``GRPOConfig``), trainer files of
the frames (``trl/trainer/dpo_trainer.py``), metric keys (``rewards/chosen`` is DPO's,
``completions/mean_length`` GRPO's), the script of the command line (``train_sft.py``, TRL's
``scripts/dpo.py``), a trainer's own settings (GRPO's ``num_generations``, DPO's
``precompute_ref_log_probs``). Generation evidence wins where both show (an SFT warm start before a
GRPO stage). With nothing in the log, a config given to envdoctor (a GRPOConfig) says ``grpo``. The
kind decides which levers an answer may offer: ``num_generations`` and ``max_completion_length``
exist in a GRPO run only, a TRL default is evidence only of a run TRL's GRPOConfig configured, and a
known failure of the generation path (vLLM generating for GRPO) is none of an offline run's
(``generation_only``).
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor.triage.draft import Log

GRPO = "grpo"
OFFLINE = "offline"

_GRPO = re.compile(
    r"GRPOTrainer|GRPOConfig|RLOOTrainer|RLOOConfig|PPOTrainer|PPOConfig|OnlineDPOTrainer|NashMDTrainer"
    r"|XPOTrainer|(?:grpo|rloo|ppo|online_dpo)_trainer\.py|\bnum_generations\b"
    r"|\bvllm_gpu_memory_utilization\b|completions/mean_length|frac_reward_zero_std|\breward_std\b"
    r"|(?<![A-Za-z])(?:grpo|GRPO)(?![A-Za-z])|\bmain_ppo\b|\bactor_rollout_ref\b|\btrain_ppo\w*\.py"
    r"|(?:online_dpo|dpo_online)\w*\.py"
)
_OFFLINE = re.compile(
    r"SFTTrainer|SFTConfig|(?<!Online)DPOTrainer|(?<!Online)DPOConfig|KTOTrainer|ORPOTrainer|CPOTrainer"
    r"|RewardTrainer|Seq2SeqTrainer|(?<![\w])(?:sft|dpo|kto|orpo|reward)_trainer\.py"
    r"|rewards/chosen|logps/chosen|(?<![\w-])\w*(?:sft|dpo|kto|orpo)\w*\.py\b|\bswift (?:sft|pt)\b"
    r"|\bprecompute_ref_log_probs\b"
    r"|--stage[ =](?:sft|dpo|kto|rm|pt)\b|\bstage: ?(?:sft|dpo|kto|rm|pt)\b"
)
#: vLLM's own OpenAI server started on the log's command line (not TRL's ``trl vllm-serve``)
VLLM_SERVER = "vllm-server"
_VLLM_SERVER = re.compile(
    r"(?m)^\s*(?:\$ )?(?:\S*/)?(?:vllm serve\b|python3?(?:\.\d+)? -m vllm\.entrypoints\.openai\.api_server\b)"
    # a Dockerfile's exec form: CMD ["python3", "-m", "vllm.entrypoints.openai.api_server", …]
    r'|^\s*(?:CMD|ENTRYPOINT) \[\s{0,4}"(?:\S{0,200}/)?(?:vllm", "serve"|python3?(?:\.\d+)?", "-m", '
    r'"vllm\.entrypoints\.openai\.api_server")'
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


#: settings only a generating trainer's configuration has (TRL's GRPOConfig, RLOOConfig,
#: OnlineDPOConfig: vLLM generation, the group of completions); SFT, DPO, KTO and ORPO have none
_GENERATION_KEY = re.compile(
    r"use_vllm|vllm_\w+|num_generations\w*|generation_batch_size|steps_per_generation"
    r"|ds3_gather_for_generation"
)


def generates(entry: Any) -> bool:
    """Whether a known failure (``knowledge.failures.KnownFailure``) is one of a run that generates:
    its ``when.trainer`` is GRPO's, or its ``when.config`` asks for a generation setting
    (``use_vllm: true``, ``vllm_mode: server``; a key listed with ``false`` too asks for nothing)."""
    if getattr(entry, "trainer", None) == GRPO:
        return True
    return any(
        _GENERATION_KEY.fullmatch(key) and not any(v is False for v in values)
        for key, values in dict(getattr(entry, "config", {})).items()
    )


def generation_only(entry: Any, log: Log) -> bool:
    """A known failure of the generation path (``generates``) on a log whose run is an offline
    trainer's (DPO, SFT: ``run_kind``): the run never took that path, so its symptom (a device
    mismatch, a size mismatch) is another failure's."""
    return generates(entry) and run_kind(log) == OFFLINE


def program(log: Log) -> str | None:
    """``vllm-server`` where the log's command line starts vLLM's own OpenAI server and nothing of
    TRL (a trainer, ``trl``) shows: a request the server refused is the server's, not a trainer's."""
    text = _text(log)
    return VLLM_SERVER if _VLLM_SERVER.search(text) and not _TRL.search(text) else None
