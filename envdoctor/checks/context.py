"""What a rule sees: facts, the plan, the curated knowledge and the resolved layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from envdoctor import versions
from envdoctor.facts.interface import Facts
from envdoctor.knowledge import Knowledge, knowledge
from envdoctor.plan.interface import GpuLayout, Plan
from envdoctor.plan.layout import resolve_layout
from envdoctor.trl_release import TrlRelease, trl_release


class LayoutUnresolved(Exception):
    """A rule needs the GPU layout of a launch line that does not say what runs on a node
    (``sudo python t.py``, ``--num_processes $N``); the engine skips that rule, saying why."""


@dataclass
class Context:
    facts: Facts
    plan: Plan = field(default_factory=Plan)
    kb: Knowledge = field(default_factory=knowledge)
    network: bool = True  # loopback health checks of a vLLM server (live runs only)
    allow_hosts: tuple[str, ...] = ()  # hosts besides loopback the user lets it contact
    options: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def resolved(self) -> GpuLayout:
        """The layout as far as it resolves (``unresolved`` says why not)."""
        return resolve_layout(self.facts, self.plan, self.kb)

    @property
    def layout(self) -> GpuLayout:
        """The resolved layout; raises ``LayoutUnresolved`` when the launch does not resolve."""
        lay = self.resolved
        if lay.unresolved:
            raise LayoutUnresolved(lay.unresolved)
        return lay

    def version(self, name: str) -> str | None:
        """The installed (or snapshot's, declared, ``--assume``d) version of ``name``."""
        return self.facts.version(name)

    @cached_property
    def trl(self) -> TrlRelease:
        """The TRL release TRL-dependent judgements use: installed, else assumed (say so)."""
        return trl_release(self.facts, self.kb)

    def on_trl(self, severity: str = "error") -> str:
        """A finding's severity when it judges TRL's release: an assumed release is no evidence
        that the run will fail, so what would be an error is a warning."""
        return "warning" if self.trl.assumed and severity == "error" else severity

    @property
    def config(self) -> dict[str, Any]:
        return self.plan.config

    def value_unknown(self, key: str) -> bool:
        """Whether the script sets ``key`` to an expression envdoctor does not evaluate
        (``bf16=is_bf16_supported()``): the key is out of ``config``, so TRL's default is not
        its value either (``Plan.computed``)."""
        return self.plan.computed(key)

    def value(self, key: str, default: Any = None) -> Any:
        """GRPO config ``key`` as the run sets it: ``COMPUTED`` where the script computes it,
        else the plan's value, else ``default`` (``Plan.value``)."""
        return self.plan.value(key, default)


def unsloth_has(ctx: Context, entry: str, *, when_missing: bool) -> bool:
    """Whether Unsloth patches the run (the training script imports it) at a release that has
    trl.yaml's ``entry`` (from its ``since``); installed with its release not recorded: the
    releases since; ``when_missing``: the answer where no Unsloth is installed or declared."""
    script = ctx.plan.script
    if script is None or script.problem or script.patched_by != "unsloth":
        return False
    since = str((ctx.kb.trl.get(entry) or {}).get("since") or "")
    have = ctx.version("unsloth")
    if not have:
        return when_missing
    return not since or versions.placeholder(have) or not versions.below(have, since)


#: GRPOConfig / TrainingArguments switches that train on the CPU
CPU_SWITCHES = ("use_cpu", "no_cuda")


def cuda_unused(ctx: Context) -> str | None:
    """Why the run uses no CUDA, or None: a CPU switch is on in its config, or this live machine
    (the training process itself, under ``preflight`` / the callback) has no GPU. CUDA-only rules
    (the allocator's, the DataParallel trap, bf16 support) do not apply then."""
    from envdoctor.plan.values import as_bool

    for key in CPU_SWITCHES:
        if as_bool(ctx.plan.config.get(key)):
            return f"CUDA is not used: {key} is on (the run trains on the CPU)"
    told = ctx.facts.extra.get("cuda_unused")  # preflight: a TrainingArguments object's use_cpu
    if isinstance(told, str) and told:
        return told
    if ctx.facts.live and not ctx.facts.gpus:
        return f"CUDA is not used: no GPU on this machine ({ctx.facts.nvml_error or 'NVML lists none'})"
    return None


def vllm_unused(ctx: Context) -> str | None:
    """Why the installed vLLM does not generate in this run, or None (it does, or envdoctor cannot
    tell): ``use_vllm`` is off, no launch line serves vLLM, and the training script was read with
    the repository modules it imports: it builds a trainer envdoctor knows (TRL's GRPOTrainer, a
    class of the repository read, another TRL trainer; not a framework's entry point, verl's or
    OpenRLHF's, which drives vLLM itself), starts no vLLM in-process (Unsloth's fast_inference),
    builds no vLLM engine outside a ``use_vllm`` test (``LLM(...)``), and builds no trainer class
    envdoctor could not read. Rules that judge vLLM's own versions (its pins, its known failures)
    then give advice, not a failure: a vLLM that never starts an engine does not load its compiled
    ops on the run's way to a step (an import of it alone does not stop the run: TimeZero trained
    with vLLM 0.7.2 imported beside torch 2.6.0)."""
    if ctx.version("vllm") is None or ctx.plan.use_vllm or ctx.plan.computed("use_vllm"):
        return None  # on, or computed by the script (``use_vllm=args.vllm``): not known off
    if any(lx.is_server for lx in ctx.plan.launches):
        return None
    script = ctx.plan.script
    if script is None or script.problem:
        return None  # the run's code was not read: whether it generates with vLLM is not known
    if script.vllm_in_process or script.vllm_in_process_unseen or script.unread_trainer or script.vllm_engine:
        return None
    # TRL's GRPOTrainer, or a class of the repository read deriving from it (a subclass that
    # overrides a step: its code is among the files read for an engine)
    builds = any(getattr(c, "cls", "") == "GRPOTrainer" for c in script.trl_calls) or script.builds_grpo
    if not (builds or script.model_by_name is not None or script.own_trainer or script.trl_other_trainer):
        return None  # no trainer envdoctor knows (a framework's entry point may drive vLLM itself)
    return (
        f"this run never generates with the installed vLLM {ctx.version('vllm')}: use_vllm is off, "
        f"no launch line serves vLLM, and {script.path} (with the repository modules it imports) "
        "builds no vLLM engine"
    )
