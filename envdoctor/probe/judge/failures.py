"""Known failure texts of a GRPO step, mapped to rules and fixes (pure: text in, findings out)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envdoctor.findings import Finding, Severity
from envdoctor.units import size_text

_SIZE = r"[\d.]+ [KMGT]iB"
#: torch ≥ 2.1: "Tried to allocate X. GPU N has a total capacity of T of which F is free."
_OOM = re.compile(
    rf"Tried to allocate (?P<want>{_SIZE})\. GPU (?P<gpu>\d+) has a total "
    rf"capacity of (?P<total>{_SIZE}) of which (?P<free>{_SIZE}) is free"
)
#: torch < 2.1: "Tried to allocate X (GPU N; T total capacity; A already allocated; F free; …)"
_OOM_OLD = re.compile(
    rf"Tried to allocate (?P<want>{_SIZE}) \(GPU (?P<gpu>\d+); "
    rf"(?P<total>{_SIZE}) total capacity; (?:{_SIZE}) already allocated; "
    rf"(?P<free>{_SIZE}) free"
)
_OOM_OTHERS = re.compile(rf"Process (?P<pid>\d+) has (?P<used>{_SIZE}) memory in use")
_OOM_ANY = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")
_MISSING = re.compile(
    r"No module named '(?P<mod>torch|transformers|trl|datasets|tokenizers|"
    r"accelerate)(?:\.[\w.]+)?'"
)
#: the worker's list of every missing module (worker.MISSING_MARK)
_MISSING_ALL = re.compile(r"envdoctor-probe missing modules: (?P<mods>[\w]+(?:, [\w]+)*)")
#: import name → distribution, for the probe's stack
_DIST = {"torch": "torch", "transformers": "transformers", "trl": "trl", "datasets": "datasets",
         "tokenizers": "tokenizers", "accelerate": "accelerate"}  # fmt: skip

#: a tensor of one operation on another device: triage reads it as the vLLM < 0.7.2 failure only
#: with vLLM evidence in the log; in the probe the layout is known, so this is the fallback
_DEVICE_MISMATCH = re.compile(
    r"Expected all tensors to be on the same device(?:, but found at "
    r"least two devices, (?P<devices>[\w:]+ and [\w:]+))?"
)
#: what triage says of a text it does not recognise (TRI003) or of an OOM (TRI001; its cuda-oom
#: reading is PRB007 here, with triage's cause and fix)
_NOT_KNOWN = {"TRI001", "TRI003"}


def _oom(text: str) -> Finding | None:
    m = _OOM.search(text) or _OOM_OLD.search(text)
    if not m and not _OOM_ANY.search(text):
        return None
    ev: dict = dict(m.groupdict()) if m else {}
    where = ""
    if m:
        where = (
            f" on GPU {ev['gpu']} (total {ev['total']}, {ev['free']} free, tried to allocate {ev['want']})"
        )
    others = list({o["pid"]: o.groupdict() for o in _OOM_OTHERS.finditer(text)}.values())
    listed = ""
    if others:
        ev["processes"] = others
        listed = "; in use by " + ", ".join(f"pid {o['pid']} ({o['used']})" for o in others[:4])
    # the cause and its fix as triage judges the same message (other processes, the allocator,
    # ranks sharing a GPU, capacity): one reading of torch's OOM text for both
    from envdoctor.triage.oom import classify as oom_cause
    from envdoctor.triage.oom import parse_oom

    parsed = parse_oom(text)
    cause = oom_cause(parsed) if parsed is not None else None
    if cause is not None:
        ev["cause"] = cause.cause
    return Finding(
        "PRB007",
        Severity.ERROR,
        f"CUDA ran out of memory{where}" + (f": {cause.why}" if cause is not None and cause.why else listed),
        cause.fix
        if cause is not None and cause.fix
        else "free the GPU of other processes (nvidia-smi), or lower the batch size",
        ev,
    )


def classify(text: str, launcher: str | None = None, stack: dict[str, str] | None = None) -> list[Finding]:
    """Findings for every known failure in ``text`` (a rank's log or error message);
    ``launcher``: the path of the launch line's program, named in install fixes. Failures are read
    with triage's signatures and the known-failures catalogue, so a failure has one id, one text
    and one fix whether the probe or triage meets it (the DataParallel refusal is LAY003 in both).
    ``stack``: the stack's versions envdoctor knows (distribution → version), pinned in the
    install command of the modules the interpreter lacks (PRB009)."""
    found: list[Finding] = []
    oom = _oom(text)
    if oom:
        found.append(oom)
    known = [
        f
        for f in _triage(text)
        if f.rule not in _NOT_KNOWN and not (oom and f.evidence.get("signature") == "cuda-oom")
    ]  # PRB007 reads it
    found += known
    if not known:
        hit = _DEVICE_MISMATCH.search(text)
        if hit:
            ev = {k: v for k, v in hit.groupdict().items() if v is not None}
            found.append(
                Finding(
                    "PRB010",
                    Severity.ERROR,
                    "tensors of one operation were on different devices (the "
                    "error GRPO with vLLM < 0.7.2, or a rank that sees several GPUs, produces)",
                    "pip install 'vllm>=0.7.2'; and make each rank see only its own GPU",
                    {"matched": hit.group(0)[:200], **ev},
                )
            )
    mods = _missing_modules(text)
    if mods:
        # the probe's own reading of a module its interpreter lacks: not triage's too
        found = [f for f in found if not (f.rule == "TRI013" and f.evidence.get("module") in mods)]
        names = ", ".join(mods)
        found.append(
            Finding(
                "PRB009",
                Severity.ERROR,
                f"the probe needs {names}, which the launched interpreter"
                f"{f' ({launcher})' if launcher else ''} cannot import",
                _install_fix(mods, launcher, stack or {}),
                {"module": mods[0], "modules": mods, "launcher": launcher},
            )
        )
    return found


def _missing_modules(text: str) -> list[str]:
    """Every stack module ``text`` says is missing: the worker's list, else each
    ``No module named`` line of the log, in order, once."""
    listed = _MISSING_ALL.search(text)
    if listed:
        return [m for m in listed.group("mods").split(", ") if m in _DIST]
    return list(dict.fromkeys(m.group("mod") for m in _MISSING.finditer(text)))


def _triage(text: str) -> list[Finding]:
    """What ``envdoctor triage`` says of ``text`` (no machine context: the probe judges that)."""
    import io

    from envdoctor.triage.diagnose import diagnose_scan
    from envdoctor.triage.scanner import scan

    return diagnose_scan(scan(io.BytesIO(text.encode("utf-8", errors="replace"))))


def _install_fix(modules: list[str], launcher: str | None, known: dict[str, str]) -> str:
    """One command that installs every missing module where the launch line's program runs (a
    Python: with it; a console script such as torchrun: in its environment): the probe extra
    and each missing distribution, at the exact version envdoctor knows of it (a local build tag
    such as ``+cu124`` left out: the package index has no such file)."""
    pins = []
    for mod in modules:
        dist = _DIST.get(mod, mod)
        version = known.get(dist)
        pins.append(f"'{dist}=={version.split('+', 1)[0]}'" if version else dist)
    args = " ".join(["'grpo-envdoctor[probe]'", *pins])
    if launcher and "python" in launcher.rsplit("/", 1)[-1]:
        return f"{launcher} -m pip install {args}"
    where = f"the environment of {launcher}" if launcher else "the launch line's environment"
    return f"pip install {args} in {where}"


# --- vLLM (probe server, colocate, legacy): its own device names mapped to the user's ---------

#: vLLM >= 0.11 names the device ("cuda:0": inside the process's CUDA_VISIBLE_DEVICES); some
#: releases print no device, which is then the process's first
_VLLM_FREE = re.compile(
    r"Free memory on device(?: (?P<device>[\w:]+))? \((?P<free>[\d.]+)/"
    r"(?P<total>[\d.]+) GiB\) on startup is less than desired GPU memory "
    r"utilization \((?P<util>[\d.]+), (?P<want>[\d.]+) GiB\)"
)
_ANY_MISSING = re.compile(r"No module named '(?P<mod>[\w]+)(?:\.[\w.]+)?'")
#: import name → the distribution to install, for what vLLM and TRL's vLLM path import
PACKAGES = {
    "flashinfer": "flashinfer-python",
    "vllm": "vllm",
    "cv2": "opencv-python-headless",
    "zmq": "pyzmq",
    "msgspec": "msgspec",
    "blake3": "blake3",
    "cbor2": "cbor2",
    "xgrammar": "xgrammar",
    "llguidance": "llguidance",
    "fastapi": "fastapi",
    "uvicorn": "uvicorn",
    "requests": "requests",
    "setproctitle": "setproctitle",
}
_TRAINING_STACK = {"torch", "transformers", "trl", "datasets", "tokenizers", "accelerate"}
#: NCCL (with NCCL_DEBUG=WARN, which the probe sets) when two ranks of a group share a GPU
_DUPLICATE = re.compile(r"Duplicate GPU detected ?: rank \d+ and rank \d+ both on CUDA device \w+")
#: what ends waiting for a weight sync early: it will not form
SYNC_FATAL = re.compile(_DUPLICATE.pattern + r"|NCCL error: invalid usage")
_SYNC_TIMEOUT = re.compile(
    r"DistStoreError|waiting for clients|init_weight_transfer_engine[^\n]{0,300}(?:[Tt]imed? ?out"
    r"|Timeout)|(?:[Tt]imed? ?out|Timeout)[^\n]{0,300}(?:init_weight_transfer_engine|"
    r"update_named_param|weight.transfer)"
)


@dataclass
class VllmContext:
    """Whose vLLM a text came from, and how to name things the user's way.

    ``visible``: the NVML indices that process saw, in CUDA order (``cuda:N`` is
    ``visible[N]``); ``cvd``: its CUDA_VISIBLE_DEVICES as given; ``holders``: per NVML index
    the other processes on that GPU, (pid, name, MiB); ``group_port`` / ``address`` /
    ``interface``: the NCCL weight-sync rendezvous (server mode).
    """

    part: str
    visible: list[int] = field(default_factory=list)
    cvd: str | None = None
    holders: dict[int, list[tuple[int, str, int]]] = field(default_factory=dict)
    group_port: int | None = None
    user_group_port: int | None = None
    address: str | None = None
    interface: str | None = None
    shared_gpus: list[int] = field(default_factory=list)  # server mode: trainer's ∩ server's
    vllm_install: str = ""  # the exact pip line for a missing vLLM (ProbeSpec.vllm_install)


def _held(ctx: VllmContext, gpu: int | None) -> str:
    rows = ctx.holders.get(gpu, []) if gpu is not None else []
    if not rows:
        return ""
    return "; held by " + ", ".join(
        f"pid {pid} ({name or '?'}, {size_text(mib, of='MiB')})"
        for pid, name, mib in sorted(rows, key=lambda r: -r[2])[:4]
    )


def classify_vllm(text: str, ctx: VllmContext) -> list[Finding]:
    """vLLM's own failures in ``text``, named with the user's GPUs, packages and ports."""
    found: list[Finding] = []
    m = _VLLM_FREE.search(text)
    if m:
        ev = {**m.groupdict(), "device": m.group("device") or "cuda:0"}
        n = int(ev["device"].split(":")[-1]) if ev["device"].split(":")[-1].isdigit() else 0
        gpu = ctx.visible[n] if n < len(ctx.visible) else None
        where = (f"GPU {gpu}" if gpu is not None else f"{ev['device']} (not resolvable)") + (
            f" ({ev['device']} of CUDA_VISIBLE_DEVICES={ctx.cvd})"
            if ctx.cvd is not None
            else f" ({ev['device']})"
        )
        room = float(ev["free"]) / float(ev["total"]) if float(ev["total"]) else 0.0
        found.append(
            Finding(
                "PRB013",
                Severity.ERROR,
                f"{ctx.part} could not start on {where}: vLLM wants {ev['want']} GiB "
                f"(gpu_memory_utilization {ev['util']}) but only {ev['free']} of {ev['total']} GiB "
                f"are free{_held(ctx, gpu)}",
                f"free GPU {gpu if gpu is not None else ev['device']} of the processes holding it, "
                f"or lower gpu_memory_utilization below {max(room - 0.02, 0.0):.2f}",
                {
                    **ev,
                    "gpu": gpu,
                    "cuda_visible_devices": ctx.cvd,
                    "holders": ctx.holders.get(gpu, []) if gpu is not None else [],
                },
            )
        )
    mods = [h.group("mod") for h in _ANY_MISSING.finditer(text)]
    if "vLLM is not available" in text:  # TRL's own check before it imports vLLM
        mods.insert(0, "vllm")
    for mod in mods:
        if mod in _TRAINING_STACK or (mod not in PACKAGES and "vllm" not in text.lower()):
            continue  # PRB009's, or nothing to do with vLLM
        pkg = PACKAGES.get(mod, mod)
        what = (
            "vLLM is not installed for the interpreter it runs under"
            if mod == "vllm"
            else f"the module {mod!r} is missing (package {pkg}); vLLM imports it at start"
        )
        found.append(
            Finding(
                "PRB014",
                Severity.ERROR,
                f"{ctx.part} failed: {what}",
                ctx.vllm_install if mod == "vllm" and ctx.vllm_install else f"pip install {pkg}",
                {"module": mod, "package": pkg},
            )
        )
        break
    s = _DUPLICATE.search(text) or _SYNC_TIMEOUT.search(text)
    if s:
        found.append(sync_timeout(ctx, s.group(0)[:200]))
    return found


def sync_timeout(ctx: VllmContext, matched: str = "") -> Finding:
    """The trainer's NCCL weight-sync group with the server did not form in time."""
    port = (
        (
            f"port {ctx.group_port}"
            + (
                f" (vllm_group_port; the config's is {ctx.user_group_port})"
                if ctx.user_group_port and ctx.user_group_port != ctx.group_port
                else " (vllm_group_port)"
            )
        )
        if ctx.group_port
        else "vllm_group_port"
    )
    iface = ctx.interface or "the one NCCL picks (NCCL_SOCKET_IFNAME unset)"
    where = f"the NCCL group on {port} at {ctx.address or 'the trainer host'}, network interface {iface}"
    ev = {
        "group_port": ctx.group_port,
        "address": ctx.address,
        "interface": ctx.interface,
        "shared_gpus": ctx.shared_gpus,
        **({"matched": matched} if matched else {}),
    }
    if ctx.shared_gpus:
        gpus = ", ".join(map(str, ctx.shared_gpus))
        return Finding(
            "PRB015",
            Severity.ERROR,
            f"the weight sync between the trainer and {ctx.part} cannot form: the trainer and "
            f"the server share GPU {gpus}, and NCCL refuses two ranks of one group on one GPU "
            f'("Duplicate GPU detected"); {where}',
            "give the vLLM server its own GPU(s) through its CUDA_VISIBLE_DEVICES, or use "
            "vllm_mode: colocate to share a GPU between training and generation",
            ev,
        )
    return Finding(
        "PRB015",
        Severity.ERROR,
        f"the weight sync between the trainer and {ctx.part} "
        + ("failed" if matched and SYNC_FATAL.search(matched) else "timed out")
        + f": {where}",
        "let the server reach the trainer on that port and interface (firewall, "
        "NCCL_SOCKET_IFNAME, VLLM_HOST_IP), and make sure no other run uses the port",
        ev,
    )
