"""Prove that vLLM generates from the trainer's weights after TRL's own weight sync.

Runs inside each probe rank after the GRPO step (stdlib + torch; imported by ``worker.py`` from
its own folder, so it must not import envdoctor). vLLM and the trainer loaded the same
checkpoint, so equal outputs before a sync prove nothing. The proof:

1. moves the trainer's weights far from what vLLM holds: every weight gets seeded noise, and
   the output embedding is scaled so the model's next-token distribution becomes sharp; with
   PEFT the adapters move too (LoRA's B starts at zero: the noise makes every adapter count), so
   a sync that skips the merge leaves vLLM far from the trainer;
2. calls TRL's own sync (``VLLMGeneration.sync_weights`` in TRL ≥ 1.0, ``_move_model_to_vllm``
   before), exactly the code the run calls each step;
3. lets vLLM generate a few tokens with their log-probs through TRL's own generation path
   (server: ``trl vllm-serve`` over HTTP; colocate: the in-process engine), and scores the same
   tokens with the trainer's forward pass, with the moved weights and with the weights before.

vLLM follows the sync when its log-probs sit close to the moved trainer's (within bf16 noise,
judged against how far the move shifted them); a sync that did nothing leaves them at the
weights before (stale); anything else means wrong tensors reached vLLM (a name mapping, a
skipped merge, a gather). The result is a plain dict for the runner's judge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

PROMPTS = ["the cat sat on the", "one two three four", "red green blue", "a dog ran to the"]
NEW_TOKENS = 8
#: the moved model's logits are scaled to about this standard deviation (nats)
TARGET_LOGIT_STD = 6.0
#: vLLM follows when its distance to the moved trainer is below this share of the move (bf16
#: noise was 0.1 % on the CPU stand-in; two swapped layers 7.5 %; measured on GPUs in
#: docs/validation/probe-model-gpu.md)
FOLLOW_SHARE = 0.05
#: and no token off by more than this share of the move (two swapped layers: 53 %)
LARGEST_SHARE = 0.3
#: the move must shift the trainer's log-probs by at least this much to prove anything
MIN_POWER = 1.0


def judge(to_moved: float, to_before: float, power: float, largest: float = 0.0) -> str:
    """``proved`` | ``stale`` | ``mismatch`` | ``not proved`` from |Δ log-prob| distances: vLLM
    to the moved trainer (mean, and ``largest``), vLLM to the trainer before the move (mean),
    and the move itself (mean)."""
    if not all(math.isfinite(x) for x in (to_moved, to_before, power, largest)):
        return "mismatch"
    if power < MIN_POWER:
        return "not proved"
    if to_moved <= FOLLOW_SHARE * power and largest <= LARGEST_SHARE * power:
        return "proved"
    if to_before <= FOLLOW_SHARE * power:
        return "stale"
    return "mismatch"


def _path(trainer: Any) -> tuple[str, Callable[[], None], Callable[[list[list[int]]], Any]] | None:
    """(description, sync, generate) of this TRL's vLLM path, or None."""
    gen = getattr(trainer, "vllm_generation", None)
    if gen is not None and hasattr(gen, "sync_weights") and hasattr(gen, "generate"):
        mode = getattr(gen, "mode", "?")
        return (
            f"{mode}: TRL's VLLMGeneration.sync_weights",
            gen.sync_weights,
            lambda prompts: _generate_trl(gen, prompts),
        )
    move = getattr(trainer, "_move_model_to_vllm", None)
    llm = getattr(trainer, "llm", None)
    if move is not None and llm is not None and hasattr(llm, "generate"):
        return (
            "in-process: TRL's _move_model_to_vllm (load_weights)",
            move,
            lambda prompts: _generate_llm(llm, prompts),
        )
    return None


def _first_logprob(entry: Any) -> float | None:
    while isinstance(entry, (list, tuple)):
        if not entry:
            return None
        entry = entry[0]
    return None if entry is None else float(entry)


def _generate_trl(gen: Any, prompts: list[list[int]]) -> list[tuple[list[int], list[float | None]]]:
    """TRL ≥ 1.0: its own generate(), raw log-probs, plain sampling for the proof."""
    keep = {
        k: getattr(gen, k)
        for k in (
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "repetition_penalty",
            "max_completion_length",
            "logprobs",
            "generation_kwargs",
        )
        if hasattr(gen, k)
    }
    try:
        for name, value in (
            ("temperature", 1.0),
            ("top_p", 1.0),
            ("min_p", 0.0),
            ("repetition_penalty", 1.0),
            ("max_completion_length", NEW_TOKENS),
            ("logprobs", 0),
            ("generation_kwargs", {}),
        ):
            if name in keep:
                setattr(gen, name, value)
        if isinstance(keep.get("top_k"), int) and keep["top_k"] > 0:
            gen.top_k = 0  # every token (vLLM: 0 or -1 turn top-k off)
        _prompt_ids, completions, logprobs, *_ = gen.generate(prompts, None, 1)
    finally:
        for name, value in keep.items():
            setattr(gen, name, value)
    if logprobs is None:
        raise RuntimeError("this TRL's vLLM path returned no log-probs")
    return [
        (list(ids), [_first_logprob(x) for x in lps]) for ids, lps in zip(completions, logprobs, strict=False)
    ]


def _generate_llm(llm: Any, prompts: list[list[int]]) -> list[tuple[list[int], list[float | None]]]:
    """An in-process vLLM ``LLM`` (TRL < 1.0): generate with log-probs of the sampled tokens."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=NEW_TOKENS, temperature=1.0, logprobs=0)
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], sampling_params=params, use_tqdm=False)
    pairs = []
    for out in outs:
        seq = out.outputs[0]
        ids = list(seq.token_ids)
        lps: list[float | None] = []
        for tok, entry in zip(ids, seq.logprobs or [], strict=False):
            item: Any = entry.get(tok) if isinstance(entry, dict) else None
            lps.append(float(getattr(item, "logprob", item)) if item is not None else None)
        pairs.append((ids, lps))
    return pairs


def _score(model: Any, prompt: list[int], completion: list[int]) -> list[float]:
    """The trainer's log-probs of ``completion`` after ``prompt`` (raw logits, no temperature)."""
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([prompt + completion], device=device)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logps = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    return logps.gather(1, torch.tensor(completion, device=device)[:, None])[:, 0].tolist()


def _final_norm(model: Any, out_weight: Any) -> Any:
    """The weight of the norm right before the LM head (``model.norm.weight`` and the like): the
    last 1-D parameter named ``norm`` outside the decoder layers and the vision tower."""
    found = None
    for name, p in model.named_parameters():
        if p is out_weight or p.dim() != 1 or "norm" not in name.rsplit(".", 2)[-2:][0]:
            continue
        if ".layers." in name or "visual" in name or "vision" in name:
            continue
        found = p
    return found


def _move(model: Any, seed: int) -> None:
    """Seeded noise on every weight (half its own spread; ones-initialised norms get 0.5), then
    the final norm (else an untied output embedding) scaled so the logits' spread is about
    ``TARGET_LOGIT_STD``: a sharp next-token distribution that each move changes."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    out = model.get_output_embeddings()
    out_weight = out.weight if out is not None else None
    with torch.no_grad():
        for p in model.parameters():
            if not p.is_floating_point():
                continue
            spread = float(p.float().std()) if p.numel() > 1 else 0.0
            scale = 0.5 * spread if spread > 1e-6 else 0.5
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            p.add_((noise * scale).to(device=p.device, dtype=p.dtype))
        if out_weight is None:
            return
        hidden = out_weight.shape[-1]
        spread = float(out_weight.float().std()) or 1.0
        norm = _final_norm(model, out_weight)
        level = float(norm.float().abs().mean()) if norm is not None else 1.0
        factor = TARGET_LOGIT_STD / (spread * math.sqrt(hidden) * max(level, 1e-3))
        factor = min(max(factor, 1.0), 1000.0)
        tied = out is not None and out_weight is getattr(model.get_input_embeddings(), "weight", None)
        if norm is not None:
            norm.mul_(factor)
        elif not tied:
            out_weight.mul_(factor)


def _without_merge(model: Any, sync: Callable[[], None]) -> None:
    """TRL's sync with PEFT's merge and unmerge turned into no-ops (a sabotage for tests)."""
    model.merge_adapter = model.unmerge_adapter = lambda *args, **kwargs: None
    try:
        sync()
    finally:
        del model.merge_adapter, model.unmerge_adapter


def _restore(model: Any, saved: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(saved[name])


def _mean_abs(a: list[float | None], b: list[float]) -> tuple[float, float]:
    pairs = [(x, y) for x, y in zip(a, b, strict=False) if x is not None]
    if not pairs:
        return math.inf, math.inf
    diffs = [abs(x - y) for x, y in pairs]
    return sum(diffs) / len(diffs), max(diffs)


def prove(trainer: Any, tokenizer: Any, fault: str | None = None) -> dict[str, Any]:
    """Run the proof on ``trainer`` after its step; a dict with ``checked``, ``verdict``, the
    distances and the path, or ``checked: False`` with the reason."""
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False):
        return {
            "checked": False,
            "reason": "the parameters are sharded (DeepSpeed / FSDP): the probe moves whole tensors only",
        }
    path = _path(trainer)
    if path is None:
        return {
            "checked": False,
            "reason": "this TRL's vLLM path has no sync and generate the probe can call",
        }
    where, sync, generate = path
    model = (
        trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
    )
    if hasattr(model, "peft_config"):  # TRL merges the adapters and sends the merged weights
        where += " (PEFT: merge_adapter, merged weights, unmerge_adapter)"
    prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    was_training = model.training
    model.eval()
    try:
        _move(model, seed=1234)
        if fault == "sync_noop":  # tests: a sync that silently does nothing
            pass
        elif fault == "skip_merge" and hasattr(model, "merge_adapter"):
            _without_merge(model, sync)  # tests: the base weights go without the adapters
        else:
            sync()
        if fault == "sync_wrong":  # tests: vLLM got other tensors than the trainer holds
            _restore(model, before)
            _move(model, seed=4321)
        outputs = generate(prompts)
        moved = [_score(model, p, ids) for p, (ids, _lp) in zip(prompts, outputs, strict=False)]
        _restore(model, before)
        old = [_score(model, p, ids) for p, (ids, _lp) in zip(prompts, outputs, strict=False)]
    finally:
        model.train(was_training)
    vllm_lp = [lp for _ids, lps in outputs for lp in lps]
    to_moved, largest = _mean_abs(vllm_lp, [x for row in moved for x in row])
    to_before, _ = _mean_abs(vllm_lp, [x for row in old for x in row])
    power, _ = _mean_abs([x for row in moved for x in row], [x for row in old for x in row])
    verdict = judge(to_moved, to_before, power, largest)
    return {
        "checked": True,
        "verdict": verdict,
        "path": where,
        "tokens": sum(len(ids) for ids, _ in outputs),
        "mean_abs_diff_to_trainer": round(to_moved, 4),
        "max_abs_diff_to_trainer": round(largest, 4),
        "mean_abs_diff_to_weights_before": round(to_before, 4),
        "move": round(power, 4),
    }
