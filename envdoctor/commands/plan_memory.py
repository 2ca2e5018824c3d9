"""``envdoctor plan-memory``: what each GPU of a GRPO run holds at its peak, and whether it fits."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

from envdoctor.commands.options import (
    LaunchCommand,
    accelerate_config_option,
    assume_option,
    config_option,
    emit,
    facts_and_plan,
    facts_option,
    launch_option,
    output_option,
    text_or_json_option,
)
from envdoctor.plan.memory.parts import each_role, gpus_text, same_gpus
from envdoctor.units import GiB, TiB, model_label, parse_size, size_text

_SIZE = re.compile(r"^\s*([\d.]+)\s*(GiB|GB|G|MiB|MB|M)?\s*$", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MEM_RULES = ["MEM101", "MEM102", "MEM103", "MEM104", "MEM105", "MEM106"]


def gpu_memory_bytes(text: str | None) -> int | None:
    """``80``, ``80GiB``, ``81559MiB`` → bytes (a bare number is GiB); ``InputError`` if not."""
    from envdoctor.errors import InputError

    if text is None:
        return None
    m = _SIZE.match(text)
    if not m:
        raise InputError("--gpu-memory", f"expected a size such as 80GiB, got {text!r}")
    value = parse_size(m.group(1), m.group(2), default="GiB")
    if value is None:
        raise InputError("--gpu-memory", f"expected a size such as 80GiB, got {text!r}")
    if not GiB <= value <= 4 * TiB:
        raise InputError("--gpu-memory", f"{text!r} is not a plausible GPU memory (1 GiB–4 TiB)")
    return int(value)


@click.command("plan-memory", cls=LaunchCommand)
@config_option
@accelerate_config_option
@facts_option("Plan for a snapshot from `envdoctor collect` instead of this machine.")
@launch_option
@click.option(
    "--model",
    type=str,
    metavar="PATH_OR_ID",
    help="Model directory or hub id whose config.json is in the local HF cache "
    "(default: the config's model_name_or_path). Nothing is downloaded.",
)
@click.option(
    "--model-params",
    type=str,
    metavar="COUNT",
    help="Parameter count when no config.json is at hand (7B, 1.5B, 500M).",
)
@click.option(
    "--gpu-memory", type=str, metavar="SIZE", help="GPU memory to plan for where no GPU is known (80GiB)."
)
@click.option(
    "--prompt-tokens",
    type=click.IntRange(1, 10**7),
    metavar="N",
    help="Prompt length in tokens (default: vllm_max_model_length less "
    "max_completion_length, else 512 assumed).",
)
@text_or_json_option
@output_option
@assume_option
@click.argument("launch_argv", nargs=-1, type=click.UNPROCESSED)
def plan_memory(
    config,
    accelerate_config,
    facts_file,
    launch,
    model,
    model_params,
    gpu_memory,
    prompt_tokens,
    fmt,
    output,
    assume,
    launch_argv,
) -> None:
    """Plan the GPU memory of a GRPO run, per GPU, before anything is loaded.

    \b
        envdoctor plan-memory --config grpo.yaml -- accelerate launch --num_processes 2 train.py
    """
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.errors import InputError
    from envdoctor.plan.memory.planner import for_context, resolve_model
    from envdoctor.redact import plan_secrets, scrub

    capacity = gpu_memory_bytes(gpu_memory)
    facts, plan = facts_and_plan(facts_file, assume, config, accelerate_config, launch, launch_argv)
    options = {
        "model": model,
        "model_params": model_params,
        "gpu_memory": capacity,
        "prompt_tokens": prompt_tokens,
    }
    ctx = Context(facts=facts, plan=plan, network=False, options={k: v for k, v in options.items() if v})
    if ctx.resolved.unresolved:  # the plan needs the ranks: say why, not "internal error"
        raise InputError("launch command", f"not resolved: {ctx.resolved.unresolved}")
    mem = for_context(ctx)
    if mem is None:
        raise InputError("--model", resolve_model(ctx)[1])
    found = run_rules(ctx, select=MEM_RULES).findings
    data = mem.to_dict()
    for row in data["gpus"]:
        g = facts.gpu(row["gpu"]) if row["gpu"] is not None else None
        row["name"] = g.name if g else None
    data["findings"] = [f.to_dict() for f in found if f.rule != "MEM104"]
    data = scrub(data, plan_secrets(plan))
    text = json.dumps(data, indent=2) + "\n" if fmt == "json" else render_text(data)
    emit(_CONTROL.sub("?", text) if fmt == "text" else text, output)
    sys.exit(1 if any(f.severity.value == "error" for f in found) else 0)


def _gib(n: int | None) -> str:
    return size_text(n, with_unit=False)


def _same(row: dict[str, Any]) -> str:
    """What must be equal for GPUs to share one table: all but the index and the rank numbers."""
    rest = {k: v for k, v in row.items() if k not in ("gpu", "role")}
    return re.sub(r"\d+", "#", row["role"]) + json.dumps(rest, sort_keys=True, default=str)


BAR = 56  # columns of the stacked bar (57 past the card); with its label a line stays within 100
_KINDS = (
    ("W", "weights", ("weights", "LoRA adapters", "reference model")),
    ("G", "gradients", ("gradients", "DDP gradient buckets")),
    ("O", "optimizer", ("optimizer states", "optimizer step temporaries")),
    ("A", "activations", ("activations", "autocast weight copies", "log-prob logits")),
    ("V", "vLLM", ("vLLM",)),
    ("+", "overhead", ()),
)


def _kind(name: str) -> str:
    for mark, _, names in _KINDS:
        if any(name == n or (n == "vLLM" and name.startswith("vLLM")) for n in names):
            return mark
    return "+"


def stacked_bar(row: dict[str, Any], width: int = BAR) -> str:
    """What one GPU holds at its peak as one bar: W weights, G gradients, O optimizer, A
    activations, V vLLM, + allocator / context / NCCL, · free; past the card's size (``|``) the
    bar goes on in the same marks."""
    sizes: dict[str, int] = {}
    for p in row["parts"]:
        if p["at_peak"]:
            mark = _kind(p["part"])
            sizes[mark] = sizes.get(mark, 0) + p["bytes"]
    total, cap = sum(sizes.values()), row["capacity_bytes"]
    scale = max(total, cap or 0, 1)
    cells, acc, drawn = [], 0, 0
    for mark, _, _ in _KINDS:
        acc += sizes.get(mark, 0)
        end = round(acc / scale * width)
        cells += [mark] * (end - drawn)
        drawn = end
    if cap:
        free_end = round(cap / scale * width)
        cells += ["·"] * max(free_end - drawn, 0)
        if total > cap:
            cells.insert(free_end, "|")
    return "".join(cells)


def _bars(data: dict[str, Any]) -> list[str]:
    groups = same_gpus(data["gpus"], key=_same)
    labels = []
    for group in groups:
        where = gpus_text([r["gpu"] for r in group])
        labels.append("each GPU" if where == "each GPU" else where)
    labels = [x if len(x) <= 16 else x[:15] + "…" for x in labels]
    width = max(len(x) for x in labels)
    lines = ["", "at the peak: " + "  ".join(f"{m} {n}" for m, n, _ in _KINDS) + "  · free"]
    for label, group in zip(labels, groups, strict=True):
        row = group[0]
        cap = row["capacity_bytes"]
        size = f"{_gib(row['total_bytes'])}/{_gib(cap)} GiB" if cap else f"{_gib(row['total_bytes'])} GiB"
        over = " over" if cap and row["total_bytes"] > cap else ""
        lines.append(f"{label:<{width}} [{stacked_bar(row)}] {size}{over}")
    return lines


def render_text(data: dict[str, Any]) -> str:
    m, s = data["model"], data["setup"]
    lines = [
        f"envdoctor plan-memory — {model_label(m['name'], m['parameters'])} "
        f"({m['family']}; {m['source'] or 'no config'})"
    ]
    gc = "on" if s["gradient_checkpointing"] else "off"
    held = s.get("held_weight_bytes", s["weight_bytes"])
    weights = (
        f"{held * 8}-bit weights (DeepSpeed bf16; the {s['weight_bytes'] * 8}-bit master copy is "
        "in the optimizer states)"
        if held != s["weight_bytes"]
        else f"{held * 8}-bit weights"
    )
    lines.append(
        f"setup: TRL {s['trl'] or '?'}, {s['strategy']} × {s['world']}, "
        f"per_device_train_batch_size {s['per_device_train_batch_size']} × "
        f"({s['prompt_length']} + {s['max_completion_length']}) tokens, gradient "
        f"checkpointing {gc}, {weights}, {s['optim']}, "
        f"beta {s['beta']}{', LoRA' if s['lora'] else ''}"
        f"{', vLLM ' + s['vllm_mode'] if s['vllm_mode'] else ''}"
    )
    source = s.get("prompt_length_source")
    if source and source != "assumed":
        lines.append(f"prompt length {s['prompt_length']} from {source}")
    host = data.get("host")
    if host:
        where = "NVMe" if host["device"] == "nvme" else "host RAM"
        lines.append(
            f"offload: ~{host['gib_per_node']:.1f} GiB per node in {where} — "
            f"{host['note']} (not checked against the machine's RAM)"
        )
    for note in data["assumed"]:
        lines.append(f"assumed: {note}")
    if data.get("measured"):
        lines.append(f"measured: {data['measured']}")
    for group in same_gpus(data["gpus"], key=_same):
        row = group[0]
        where = gpus_text([r["gpu"] for r in group])
        where = "each training GPU" if where == "each GPU" else where
        lines += [
            "",
            f"{where} — {each_role(row['role'], len(group))}"
            + (f" — {row['name']}" if row.get("name") else ""),
        ]
        width = max(len(p["part"]) for p in row["parts"]) + 2
        lines.append(f"    {'PART':<{width}}{'GiB':>8}  NOTE")
        for p in row["parts"]:
            name = p["part"] if p["at_peak"] else f"({p['part']})"
            note = p["note"] if p["at_peak"] else f"{p['note']}; not held at the peak"
            lines.append(f"    {name:<{width}}{p['gib']:>8.1f}  {note}")
        lines.append(f"    {'total at peak':<{width}}{_gib(row['total_bytes']):>8}")
        lines.append(f"    {'capacity':<{width}}{_gib(row['capacity_bytes']):>8}")
        head = row["headroom_bytes"]
        verdict = "" if head is None else ("  over the GPU" if head < 0 else "")
        lines.append(f"    {'headroom':<{width}}{_gib(head):>8}{verdict}")
        if row["kv_need_bytes"] is not None:
            lines.append(
                f"    one max_model_len ({row['max_model_len']}) sequence needs "
                f"{_gib(row['kv_need_bytes'])} GiB of KV cache; the budget leaves "
                f"{_gib(row['kv_free_bytes'])} GiB"
            )
        for f in row["fixes"] if head is not None and head < 0.1 * (row["capacity_bytes"] or 0) else []:
            lines.append(f"    fix: {f['fix']} — saves ~{f['saves_gib']:.1f} GiB")
        together = row.get("fits_with")
        if together:
            lines.append(
                f"    fits with: {' + '.join(together['changes'])} — peak "
                f"~{_gib(together['total_bytes'])} GiB"
            )
        largest = row.get("largest_batch_that_fits")
        if largest == 0:
            one = row.get("batch_1_total_bytes")
            lines.append(
                "    no per_device_train_batch_size fits, not even 1"
                + (
                    f": batch 1 still needs ~{_gib(one)} GiB of {_gib(row['capacity_bytes'])} GiB —"
                    " what does not shrink with the batch (weights, optimizer states, gradients,"
                    " overhead) is already too much; see the fixes above"
                    if one
                    else ""
                )
            )
        elif largest is not None:
            lines.append(f"    largest per_device_train_batch_size that fits: {largest}")
    lines += _bars(data)
    lines.append("")
    for f in data["findings"]:
        mark = {"error": "✗", "warning": "!", "info": "•"}[f["severity"]]
        message, tail = f["message"], f["evidence"].get("assumed_note")
        if tail and message.endswith(tail):  # listed once above, under "assumed:"
            message = message[: -len(tail)]
        lines.append(f"{mark} {f['rule']} {message}")
    if not data["findings"]:
        fits = all(r["headroom_bytes"] is not None for r in data["gpus"])
        lines.append(
            "✓ Every GPU holds its planned peak."
            if fits
            else "No verdict: GPU memory unknown (no GPU facts; --gpu-memory 80GiB)."
        )
    return "\n".join(lines) + "\n"
