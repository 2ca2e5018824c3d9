"""Rules on the GPUs themselves: presence, visibility, driver, capability, MIG."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import versions
from envdoctor.checks.context import Context, unsloth_has
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.layout import trainer_env


@rule("GPU001")
def no_gpu(ctx: Context) -> Iterator[Hit]:
    if ctx.facts.gpus:
        return
    from envdoctor.checks.context import CPU_SWITCHES
    from envdoctor.plan.values import as_bool

    if any(as_bool(ctx.plan.config.get(k)) for k in CPU_SWITCHES):
        return  # training on the CPU on purpose: no GPU is no news
    if ctx.facts.gpus_unknown:
        yield hit(
            "the training machine's GPUs are not known (the snapshot gives gpus: null): no rule "
            "judged a GPU count, model or memory",
            severity="info",
            fix="take the snapshot on the GPU node (`envdoctor collect` there) to have them judged",
        )
        return
    why = ctx.facts.nvml_error or "NVML found no GPU"
    sev = "warning" if ctx.plan.trainer or ctx.plan.config else "info"
    yield hit(
        f"no GPU seen: {why}",
        severity=sev,
        fix="run envdoctor on the GPU node (or `envdoctor collect` there and "
        "`envdoctor check --facts FILE` here); check `nvidia-smi` works",
        nvml_error=ctx.facts.nvml_error,
    )


@rule("GPU002", needs=("gpus",))
def visible_devices_invalid(ctx: Context) -> Iterator[Hit]:
    problem = ctx.layout.problems.get("visible")
    if problem:
        n = len(ctx.facts.gpus)
        from envdoctor.checks.layout import valid_ids

        raw = trainer_env(ctx.facts, ctx.plan.trainer).get("CUDA_VISIBLE_DEVICES", "")
        ids = valid_ids(raw, n)
        yield hit(
            problem,
            fix=f"use indices 0–{n - 1} (NVML order: `nvidia-smi -L`), each once; "
            f"e.g. CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(min(n, 2)))}",
            remedy=Remedy(env_set={"CUDA_VISIBLE_DEVICES": ids}, fix=f"export CUDA_VISIBLE_DEVICES={ids}")
            if ids
            else None,
            visible=ctx.layout.visible,
        )


@rule("GPU003", needs=("gpus",))
def driver_too_old(ctx: Context) -> Iterator[Hit]:
    torch = ctx.version("torch")
    built = versions.cuda_of_torch(torch)
    drv = ctx.facts.driver.cuda
    if not (built and drv) or not versions.parse(drv):
        return
    if versions.below(drv, built):
        same_major = built.split(".")[0] == drv.split(".")[0]
        if same_major:
            yield hit(
                f"torch {torch} is built for CUDA {built}; the driver {ctx.facts.driver.version}"
                f" supports CUDA {drv}: it runs through minor-version compatibility, but "
                "kernels compiled for newer PTX and some features fail",
                severity="warning",
                fix=f"upgrade the NVIDIA driver to one supporting CUDA {built}, or install a "
                f"torch built for cu{drv.replace('.', '')}",
                built=built,
                driver_cuda=drv,
            )
        else:
            yield hit(
                f"torch {torch} is built for CUDA {built}, but the driver "
                f"{ctx.facts.driver.version} supports only CUDA {drv}: torch will report "
                "no usable GPU",
                fix=f"upgrade the NVIDIA driver to one supporting CUDA {built}, or install "
                f"a torch built for CUDA {drv} (pip install torch --index-url "
                f"https://download.pytorch.org/whl/cu{drv.replace('.', '')})",
                built=built,
                driver_cuda=drv,
            )


def _bf16_requested(ctx: Context) -> bool:
    if ctx.value_unknown("bf16") or ("bf16" not in ctx.config and ctx.value_unknown("fp16")):
        return False  # computed in the script (`bf16=is_bf16_supported()`): not TRL's default
    if "bf16" in ctx.config:
        return ctx.config["bf16"] is True
    if ctx.config.get("fp16") is True:
        return False  # the default is `not fp16` (trl.yaml bf16_default_true): fp16 asked, bf16 off
    unsloth = _unsloth_default(ctx, "bf16")
    if unsloth is not None:
        return unsloth
    return bool(ctx.kb.feature("bf16_default_true", ctx.trl.version))


def _unsloth_default(ctx: Context, key: str) -> bool | None:
    """The default Unsloth's patched config gives ``key`` where the script it patches leaves it
    unset (trl.yaml ``unsloth_config_defaults``: bf16 / fp16 False, the trainer then picks the
    precision from the model's dtype); None where Unsloth does not patch the run, or its release
    is one before those defaults."""
    defaults = (ctx.kb.trl.get("unsloth_config_defaults") or {}).get("defaults") or {}
    if key in ctx.plan.config_origin or key not in defaults:
        return None
    if not unsloth_has(ctx, "unsloth_config_defaults", when_missing=True):
        return None
    return bool(defaults[key])


@rule("GPU004", needs=("gpus", "plan", "cuda"))
def bf16_unsupported(ctx: Context) -> Iterator[Hit]:
    if not _bf16_requested(ctx):
        return
    torch = ctx.version("torch")
    since = str((ctx.kb.trl.get("bf16_emulated") or {}).get("torch_since") or "")
    emulated = bool(since and torch and not versions.placeholder(torch) and versions.at_least(torch, since))
    script = ctx.plan.script
    unsloth = script is not None and not script.problem and script.patched_by == "unsloth"
    if unsloth:  # Unsloth answers is_bf16_supported() with including_emulation=False (trl.yaml)
        emulated = False
    for gpu in (ctx.facts.gpu(i) for i in ctx.layout.training):
        if gpu and gpu.cc_major is not None and gpu.cc_major < 8:
            origin = ctx.plan.config_origin.get("bf16", f"TRL {ctx.trl.label()}'s default")
            where = (
                f"bf16 is on ({origin}) but GPU {gpu.index} ({gpu.name}, compute "
                f"capability {gpu.compute_capability}) has no bf16 hardware"
            )
            if emulated:
                yield hit(
                    f"{where}: torch {torch} emulates it (torch.cuda.is_bf16_supported() answers True "
                    "there, so TrainingArguments accepts bf16), and training runs slower than in fp16, "
                    "which the GPU has natively",
                    fix="set bf16: false and fp16: true for speed",
                    remedy=Remedy(config_set={"bf16": False, "fp16": True}),
                    gpu=gpu.index,
                    torch=torch,
                    severity="info",
                )
                return
            why = (
                " (Unsloth, which the script imports, makes torch.cuda.is_bf16_supported() answer "
                "False there)"
                if unsloth
                else ""
            )
            yield hit(
                f"{where}: TrainingArguments refuses at start{why}",
                fix="set bf16: false and fp16: true",
                remedy=Remedy(config_set={"bf16": False, "fp16": True}),
                gpu=gpu.index,
                severity="error" if "bf16" in ctx.config else ctx.on_trl(),
            )
            return


#: Local version labels of torch builds without CUDA: what download.pytorch.org names its
#: CPU, ROCm and Intel GPU wheels (``2.5.1+cpu``, ``2.5.1+rocm6.2``, ``2.5.1+xpu``).
_NOT_CUDA = {"cpu": "a CPU-only build", "rocm": "a ROCm (AMD) build", "xpu": "an Intel XPU build"}


def non_cuda_build(version: str | None) -> str | None:
    """What kind of non-CUDA torch build ``version`` names by its local label, or None: a
    ``+cuXXX`` label and a plain PyPI version (PyPI's Linux wheels are the CUDA builds) are
    CUDA builds, and a label envdoctor does not know says nothing."""
    v = versions.parse(version)
    label = (v.local or "").lower() if v is not None else ""
    return next((what for prefix, what in _NOT_CUDA.items() if label.startswith(prefix)), None)


@rule("GPU008", needs=("gpus",))
def torch_without_cuda(ctx: Context) -> Iterator[Hit]:
    torch = ctx.version("torch")
    what = non_cuda_build(torch)
    if what is None:
        return
    v = versions.parse(torch)
    public = v.public if v is not None else torch
    n = len(ctx.facts.gpus)
    drv = ctx.facts.driver.cuda
    tag = f"cu{drv.replace('.', '')}" if drv and versions.parse(drv) else "cuXXX"
    yield hit(
        f"torch {torch} is {what}, but this machine has {n} NVIDIA GPU"
        f"{'s' if n > 1 else ''}: torch.cuda.is_available() is False, so the trainer and "
        "vLLM find no CUDA device (training on the CPU, or failing at start)",
        fix=f"pip install --force-reinstall 'torch=={public}'  # PyPI's Linux wheel is the "
        f"CUDA build; or --index-url https://download.pytorch.org/whl/{tag} for a "
        "CUDA your driver supports",
        torch=torch,
        gpus=n,
    )


@rule("GPU005", needs=("gpus",))
def mixed_gpu_models(ctx: Context) -> Iterator[Hit]:
    gpus = [ctx.facts.gpu(i) for i in ctx.layout.training or ctx.layout.visible]
    known = [g for g in gpus if g]
    names = {g.name for g in known}
    capabilities = {g.compute_capability for g in known if g.compute_capability}
    if len(names) > 1 or len(capabilities) > 1:  # an unknown capability differs from nothing
        models = sorted({f"{g.name} (cc {g.compute_capability or 'unknown'})" for g in known})
        yield hit(
            f"the training ranks run on different GPU models: {', '.join(models)}; the "
            "slowest sets the pace and kernels/precision may differ per rank",
            severity="warning",
            fix="train on GPUs of one model (set --gpu_ids / CUDA_VISIBLE_DEVICES to identical GPUs)",
            models=models,
        )


@rule("GPU006", needs=("gpus",))
def mig_enabled(ctx: Context) -> Iterator[Hit]:
    used = set(ctx.layout.training) | set(ctx.layout.generation) | set(ctx.layout.visible)
    for gpu in ctx.facts.gpus:
        if gpu.mig and gpu.index in used:
            yield hit(
                f"GPU {gpu.index} ({gpu.name}) is in MIG mode: a process sees at most one "
                "MIG instance, NCCL does not run across instances, and vLLM gets only the "
                "instance's memory",
                severity="warning",
                fix=f"disable MIG (sudo nvidia-smi -i {gpu.index} -mig 0) or give each "
                "process one MIG-… id in CUDA_VISIBLE_DEVICES",
                gpu=gpu.index,
                mig_devices=gpu.mig_devices,
            )


@rule("GPU007", needs=("gpus",))
def device_order_ambiguous(ctx: Context) -> Iterator[Hit]:
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    if (env.get("CUDA_DEVICE_ORDER") or "").upper() == "PCI_BUS_ID":
        return
    kinds = {(g.name, g.compute_capability, g.memory_total_mib) for g in ctx.facts.gpus}
    if len(kinds) > 1 and (ctx.plan.trainer or "CUDA_VISIBLE_DEVICES" in env):
        yield hit(
            "this machine mixes GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA "
            "numbers GPUs fastest-first, so index N in CUDA_VISIBLE_DEVICES / cuda:N is not "
            "GPU N of nvidia-smi",
            severity="warning",
            fix="export CUDA_DEVICE_ORDER=PCI_BUS_ID",
            remedy=Remedy(env_set={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
            models=sorted(map(str, kinds)),
        )
