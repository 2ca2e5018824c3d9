"""Turn a log's matches into findings: deduplicated, and judged against this machine.

One finding per failure (per signature; per GPU and side for out-of-memory errors), ordered by
where it first appears, with the ranks and the count. The signature's ``confirm`` data and the
facts, config and launch line say whether the cause holds here and give the exact fix; an NCCL
timeout after another failure is marked as its consequence. When nothing known matched, the first
exception of the log is named (TRI003, a warning: a crash, not recognised).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge import knowledge
from envdoctor.triage import classes, hostenv, knobs, locale_codec
from envdoctor.triage.confirm import confirm, dataparallel, layout_given
from envdoctor.triage.confirm import from_log as from_log_of
from envdoctor.triage.draft import (
    WRAPPERS,
    Draft,
    Log,
    finding,
    frames,
    logged_as_warning,
    reject,
    unknown_finding,
    warning_line,
    where,
)
from envdoctor.triage.interface import Match, ScanResult
from envdoctor.triage.logversions import LogVersion, facts_for_advice, from_log, shown
from envdoctor.triage.oom import Oom, OomLog, classify, parse_oom, processes_now
from envdoctor.triage.oomforms import Form
from envdoctor.triage.oomforms import by_id as oom_form
from envdoctor.triage.oomforms import find as find_form
from envdoctor.triage.runkind import run_kind
from envdoctor.triage.scanner import split_prefix
from envdoctor.units import parse_size

_VLLM_PROC = re.compile(r"^\s*\((?:EngineCore|VllmWorker|Worker|RayWorker|LLMEngine)\w*[ )]")
_SECONDARY = WRAPPERS  # named after the root failure where the log shows it


def _generic(ms: list[Match], log: Log) -> list[Draft]:
    sig = ms[0].signature
    conf = confirm(sig.confirm_map, log.ctx, sig.rule)
    d = finding(sig.rule, ms, log, sig.summary, conf=conf)
    f = d.finding
    if sig.confirm_map.get("package_below") and not conf.held and f.severity == Severity.ERROR:
        # the cause is a release older than a fix, and neither the log nor this machine shows
        # one: a generic message (a size off by one) is that cause only likely (severity by
        # certainty: a warning where the entry depends on versions the log does not show)
        d.finding = Finding(f.rule, Severity.WARNING, f.message, f.fix, f.evidence)
    return [d]


def _vllm_evidence(m: Match, log: Log) -> bool:
    """The log or the judged machine shows vLLM in this run."""
    if log.hint("vllm-version") or any(f for f in frames(m) if "/vllm/" in f or "/trl/" in f):
        return True
    if any("vllm" in line.lower() or "model_runner" in line for line in m.context):
        return True
    return log.ctx is not None and log.ctx.version("vllm") is not None


def _device_mismatch(ms: list[Match], log: Log) -> list[Draft]:
    g = ms[0].groups
    devices = {g.get(k, "") for k in ("first", "second", "argument_device", "other_device")}
    if any(d.startswith("cpu") for d in devices):
        return reject(ms)
    if "dataparallel-replica" in log.by_sig:
        return []  # the replica's finding tells this failure
    sig, ctx = ms[0].signature, log.ctx
    if any("data_parallel.py" in f or "parallel_apply.py" in f for f in frames(ms[0])) and not (
        ctx is not None and layout_given(ctx)
    ):
        what = (
            "nn.DataParallel ran a replica on another GPU than a tensor it uses (a tensor or "
            "module nn.DataParallel did not copy)"
        )
        return [finding("TRI008", ms, log, what)]
    banner = log.hint("vllm-version")
    logged = banner.groups.get("version") if banner else None
    conf = confirm(sig.confirm_map, ctx, sig.rule)
    if (
        ctx is not None
        and layout_given(ctx)
        and dataparallel(ctx.layout)
        and not versions.below(ctx.version("vllm"), "0.7.2")
    ):
        conf.rule = "LAY003"  # vLLM is recent enough: the DataParallel trap is the cause
        return [finding(conf.rule, ms, log, sig.summary, conf=conf)]
    if (
        banner is not None
        and logged
        and versions.below(logged, "0.7.2")
        and (not conf.confirmed or from_log_of(ctx, "vllm"))
    ):
        what = (
            f"{sig.summary}: vLLM {logged} (its start banner, line {banner.line_no}) puts "
            "generation inputs on cuda:0 while its model is on the vLLM GPU; vLLM 0.7.2 "
            "fixed that"
        )
        return [
            finding("PKG002", ms, log, what, "pip install 'vllm>=0.7.2' (with the torch it requires)", conf)
        ]
    if logged and not versions.below(logged, "0.7.2") and not conf.confirmed:
        return reject(ms)  # not vLLM's old bug, and nothing here shows another cause
    if not conf.confirmed and not _vllm_evidence(ms[0], log):
        return reject(ms)
    return [finding(conf.rule, ms, log, sig.summary, conf=conf)]


def _rotary(ms: list[Match], log: Log) -> list[Draft]:
    g = ms[0].groups
    off_by_one = abs(int(g["size_a"]) - int(g["size_b"])) == 1
    if not off_by_one and not any("rotary" in line for line in ms[0].context):
        return [reject(ms)[0]]
    return _generic(ms, log)


def _vllm_device(ms: list[Match], log: Log) -> list[Draft]:
    ctx, g = log.ctx, ms[0].groups
    rule = "LAY001" if ctx is not None and str(ctx.config.get("vllm_device", "auto")) != "auto" else "LAY002"
    conf = confirm(ms[0].signature.confirm_map, ctx, rule)
    seen = int(g["suggested_num_processes"]) + 1 if "suggested_num_processes" in g else None
    if ctx is not None and ctx.facts.gpus and layout_given(ctx) and len(ctx.layout.visible) == 1:
        seen = 1
    if seen == 1:  # TRL's advice, --num_processes 0, cannot run: the one GPU must be shared
        util = knobs.setting(ctx, "vllm_gpu_memory_utilization")
        what = (
            f"vLLM was to run on {g['device']}, but the run sees one GPU only: TRL's advice "
            "(--num_processes 0) would leave no process to train"
        )
        fix = (
            "share the one GPU: set vllm_device: cuda:0 and lower "
            f"{util} (e.g. 0.3–0.5) so the trainer keeps room on it; later TRL releases share "
            "a single GPU by themselves (huggingface/trl#2827)"
        )
        return [finding(rule, ms, log, what, fix, conf)]
    what = f"vLLM was to run on {g['device']}, but the trainer saw " + (
        f"{seen} GPU(s) (cuda:0–cuda:{seen - 1}), all of them training" if seen else "no such GPU"
    )
    fix = conf.fix
    if not fix and ctx is not None and ctx.facts.gpus:
        lay = ctx.layout
        n = len(lay.visible)
        what += f"; here {n} GPU(s) are visible ({lay.visible_source})"
        fix = (
            f"leave one GPU for vLLM: --num_processes {n - 1} (vllm_device auto then picks "
            f"cuda:{n - 1} = GPU {lay.visible[n - 1]})"
            if n > 1
            else "share the one GPU: vllm_device: cuda:0 with a lower vllm_gpu_memory_utilization"
        )
    elif not fix and seen:
        fix = f"--num_processes {seen - 1} (one fewer than the GPUs the run saw)"
    return [finding(rule, ms, log, what, fix, conf)]


#: vLLM's own words for its engine failing to start, or for the step of the start that sizes its
#: memory: an out-of-memory beside them is the engine's (its share of the GPU), not training's
_VLLM_START = re.compile(
    r"Engine core initialization failed|EngineCore failed to start|determine_available_memory"
    r"|Error in memory profiling"
)


def _vllm_side(m: Match) -> bool:
    if _VLLM_PROC.match(m.text) or "KV cache" in m.text or "kv_cache" in m.text:
        return True
    if any(_VLLM_START.search(line) for line in m.context[-MAX_START_LINES:]):
        return True
    return any("/vllm/" in f for f in frames(m))


MAX_START_LINES = 40  # lines before the out-of-memory read for vLLM's engine start


def _oom(ms: list[Match], log: Log) -> list[Draft]:
    hint = log.by_sig.get("vllm-device-shared-warning", [])
    shared_index = int(hint[0].groups["index"]) if hint else None
    groups: dict[tuple[int | None, bool], list[Match]] = {}
    first_oom: dict[tuple[int | None, bool], Oom | None] = {}  # parsed once per group
    forms: dict[tuple[int | None, bool], Form | None] = {}
    for m in ms:
        form = find_form(m.text, m.context)
        oom = parse_oom(m.text)
        if oom is not None and oom.want_mib is None:
            oom = parse_oom(_with_continuation(m, log)) or oom  # the message's numbers on its next lines
        key = (oom.gpu if oom else None, _vllm_side(m) or form is not None and form.side == "vllm")
        forms.setdefault(key, form)
        groups.setdefault(key, []).append(m)
        first_oom.setdefault(key, oom)
    world = max((m.rank for sm in log.by_sig.values() for m in sm if m.rank is not None), default=-1) + 1
    if log.ctx is not None and layout_given(log.ctx):
        world = max(world, log.ctx.layout.world_size)
    colocated = _colocated(log)
    trainer = run_kind(log)
    drafts = []
    for key, gms in groups.items():
        oom, vllm_side = first_oom[key], key[1]
        if oom is None:
            continue
        dp = any("nn/parallel/data_parallel.py" in line for line in gms[0].context)
        ranks = sorted({m.rank for m in gms if m.rank is not None})
        cause = classify(
            oom,
            log.ctx,
            log=OomLog(
                vllm_side,
                shared_index,
                dp,
                colocated,
                classes.hami_cap(gms[0]),
                ranks if len(ranks) > 1 else [],
                world,
                unseen=not frames(gms[0]) and log.lines <= 3 and not colocated and shared_index is None,
                trainer=trainer,
                form=forms[key],
                engine_beside=engine_beside(log),
            ),
            context=list(gms[0].context),
        )
        count = log.counts.get("cuda-oom") if len(groups) == 1 else len(gms)
        first = gms[0]
        message = f"{cause.message} ({where(gms, count)})"
        ev = {
            "signature": "cuda-oom",
            "line": first.line_no,
            **{k: v for k, v in cause.evidence.items() if v not in (None, {})},
        }
        if first.context:
            ev["context"] = list(first.context[-6:])
        drafts.append(
            Draft(first.line_no, Finding(cause.rule, Severity.ERROR, message, cause.fix, ev), first.rank)
        )
    return drafts


#: lines after an out-of-memory message that may continue it (torch's sentences, each on a line of
#: its own in some pastes)
MAX_CONTINUED = 8


def _with_continuation(m: Match, log: Log) -> str:
    """The message of ``m`` with the lines after it, up to a frame, another exception or another
    out-of-memory message."""
    if not log.head:
        return m.text
    lines = log.head[: 1 << 20].decode("utf-8", "replace").split("\n")[m.line_no : m.line_no + MAX_CONTINUED]
    more = []
    for line in lines:
        text = line.strip()
        if (
            text.startswith(("Traceback", "File "))
            or "out of memory" in text.lower()
            or _CONTINUATION_STOP.match(text)
        ):
            break
        more.append(text[:2000])
    return " ".join([m.text, *more])


_CONTINUATION_STOP = re.compile(r"[\w.]{1,80}(?:Error|Exception): ")


#: a run that colocates an inference engine with training in processes of its own: verl's hybrid
#: engine (``actor_rollout_ref.hybrid_engine=True``), OpenRLHF's ``--colocate_all_models`` /
#: ``--vllm_enable_sleep``, a colocated vLLM / SGLang test or config of SkyRL and the like
_ENGINE_BESIDE = re.compile(
    rb"(?i)hybrid_engine\W{0,3}(?:=|:)\s{0,3}true|colocate_all(?:_models)?\b"
    rb"|colocat[a-z]{0,10}[^\n]{0,200}?(?<![a-z])(?:vllm|sglang)(?![a-z])"
    rb"|(?<![a-z])(?:vllm|sglang)(?![a-z])[^\n]{0,200}?colocat[a-z]{0,10}"
)


#: a colocation named apart from the engine (a test's id ``[colocate_fsdp2]``, a flag ``--colocate``)
_COLOCATE_WORD = re.compile(rb"(?i)(?<![a-z])colocat(?:e|ed|ion)(?:_[a-z0-9_]{1,40})?(?![a-z])")
#: an inference engine the log shows running (its frames, its banner, its name)
_ENGINE_NAMED = re.compile(rb"(?i)(?<![a-z])(?:vllm|sglang)(?![a-z])")


def engine_beside(log: Log) -> str:
    """What in the log's head says its run colocates an inference engine with training (""): on
    one line, or a colocation named on one line and the engine (vLLM's, SGLang's frames or banner)
    on another of the same log."""
    head = log.head[: 4 * 1024 * 1024]
    m = _ENGINE_BESIDE.search(head)
    if m is None and _ENGINE_NAMED.search(head):
        m = _COLOCATE_WORD.search(head)
    return m.group(0).decode("utf-8", "replace")[:120].strip() if m else ""


def _colocated(log: Log) -> bool:
    """vLLM runs inside the training processes: the config says so, vLLM's banner names the
    external launcher, or vLLM's engine-start lines carry no engine process's prefix (and the
    trainer never reached a server)."""
    mode = log.ctx.config.get("vllm_mode") if log.ctx is not None else None
    banner, engine = log.hint("vllm-version"), log.hint("vllm-in-process")
    return (
        mode == "colocate"
        or bool(banner and "external_launcher" in banner.text)
        or (
            engine is not None
            and not engine.text.startswith("(")
            and mode is None
            and log.hint("vllm-server-up") is None
        )
    )


def _gib(text: str | None) -> float | None:
    """A GiB count of vLLM's message; None when it is not a number (``1.2.3``)."""
    return parse_size(text, "GiB", into="GiB")


def _vllm_gpu(ctx: Context | None, device: str | None) -> int | None:
    """The NVML index of the GPU a vLLM message names (``cuda:N`` of its process), if known."""
    if ctx is None or not ctx.facts.gpus:
        return None
    lay = ctx.layout
    m = re.match(r"cuda:(\d+)$", device or "")
    if m:
        server = layout_given(ctx) and lay.generation_mode == "server"
        pool, i = (lay.generation if server else lay.visible), int(m.group(1))
        return pool[i] if i < len(pool) else None
    if layout_given(ctx) and len(lay.generation) == 1:
        return lay.generation[0]
    return ctx.facts.gpus[0].index if len(ctx.facts.gpus) == 1 else None


def _vllm_memory(ms: list[Match], log: Log) -> list[Draft]:
    sig, g, ctx = ms[0].signature, ms[0].groups, log.ctx
    conf = confirm(sig.confirm_map, ctx, sig.rule)
    util_name = knobs.pick(ctx, "vllm_gpu_memory_utilization")
    util = knobs.setting(ctx, util_name)
    max_len = knobs.pick(ctx, "vllm_max_model_length", "vllm_max_model_len")
    if ctx is not None and layout_given(ctx) and ctx.layout.generation_mode == "server":
        util_name = util = "--gpu_memory_utilization of trl vllm-serve"
        max_len = "--max_model_len"
    holders, _ = processes_now(ctx, _vllm_gpu(ctx, g.get("device")))
    now = f"; on that GPU now: {', '.join(holders)}" if holders else ""
    if sig.id == "vllm-free-memory-below-utilization" and not g.get("free_gib"):
        what = (
            f"at vLLM's start the GPU had less free memory than {g['utilization']} of it "
            "(gpu_memory_utilization): memory was in use before vLLM started — other processes, or this "
            "process's own (a training model loaded on the same GPU first, blocks PyTorch's allocator "
            f"keeps cached after it){now}"
        )
        fix = conf.fix or (
            f"free that memory before vLLM starts (other processes: nvidia-smi; this process: move or "
            f"offload the training model and call torch.cuda.empty_cache() first), or lower {util_name} "
            f"below the free fraction of the GPU"
        )
    elif sig.id == "vllm-free-memory-below-utilization":
        free, total = _gib(g["free_gib"]) or 0.0, _gib(g["total_gib"]) or 1.0
        fits = max(math.floor((free / total - 0.02) * 100) / 100, 0.0)
        what = (
            f"vLLM asked for {g['utilization']} × {total:.2f} GiB = {g['requested_gib']} GiB "
            f"at start, but only {free:.2f} GiB were free: {total - free:.2f} GiB of the GPU "
            f"were in use before vLLM started (other processes, or this one){now}"
        )
        fix = conf.fix or (
            f"free the GPU (nvidia-smi), or lower {util_name} from {g['utilization']} to {fits:.2f}"
        )
    elif "estimated_max_len" in g or "kv_tokens" in g:
        limit = g.get("estimated_max_len") or g.get("kv_tokens")
        want = g.get("max_model_len") or g.get("max_seq_len")
        what = f"vLLM's KV cache cannot hold one sequence of max_model_len {want}" + (
            f" ({g['needed_gib']} GiB needed, {g['available_gib']} GiB available)"
            if "needed_gib" in g
            else ""
        )
        fix = f"set {max_len} to at most {limit}, or raise {util} if the GPU has room"
    elif sig.id == "vllm-kv-cache-too-small":
        what = f"vLLM's KV cache cannot hold one sequence of max_model_len {g['max_model_len']}"
        fix = f"lower {max_len} or raise {util}"
    else:
        what = (
            f"vLLM's weights and activations used up its memory share: nothing was left for the KV cache{now}"
        )
        fix = conf.fix or (
            f"raise {util} if the GPU has room (free it of other processes), "
            f"or lower {max_len}; use a smaller or quantized model otherwise"
        )
    return [finding(sig.rule, ms, log, what, fix, conf)]


def _nccl(ms: list[Match], log: Log) -> list[Draft]:
    sig, g = ms[0].signature, ms[0].groups
    if sig.id == "nccl-error" and "nccl-duplicate-gpu" in log.by_sig:
        return []  # NCCL's "invalid usage" is the duplicate GPU told by its own finding
    if sig.id == "nccl-timeout":
        ran = int(g["ran_ms"]) / 1000 if "ran_ms" in g else None
        op = f"{g['op']} #{g['seq']}" if "op" in g else "a collective"
        what = f"{op} timed out" + (f" after {ran:.0f} s" if ran else "") + ": another rank never reached it"
        fix = (
            "fix the first failure of the log; if there is none, a rank was still busy (GRPO's "
            "generation can outlast the timeout) or hung: raise ddp_timeout (seconds) and run "
            "once with NCCL_DEBUG=INFO"
        )
    elif sig.id == "nccl-watchdog-hang":
        what = "the NCCL watchdog stopped making progress (a CUDA/NCCL call hung)"
        fix = (
            "look for the rank stuck in a CUDA call (py-spy dump); raise "
            "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only if the hang is expected"
        )
    elif (peer := hostenv.peer_access(ms[0], log)) is not None:
        return [peer]  # CUDA error 217: GPUs without peer access (TRI025)
    elif _nccl_out_of_memory(ms[0], log):
        what = (
            "NCCL could not allocate GPU memory for its buffers (\"Cuda failure 'out of memory'\" after "
            "NCCL's error): the GPU was full when the collective or communicator was set up"
        )
        fix = (
            "leave GPU memory for NCCL: lower vLLM's gpu_memory_utilization where it shares the GPU, the "
            "batch size or sequence lengths, or free the GPU of other processes; NCCL_BUFFSIZE smaller "
            "lowers NCCL's own share"
        )
        return [finding("TRI001", ms, log, what, fix, allocator="NCCL")]
    elif hostenv.UNHANDLED_CUDA.search(g.get("error", "") or ms[0].text):
        what = (
            "NCCL failed: unhandled cuda error — a CUDA call inside NCCL failed, and the log does not "
            'show which (NCCL names it on a "Cuda failure …" line, printed with NCCL_DEBUG=WARN)'
        )
        fix = (
            "run once with NCCL_DEBUG=WARN and read NCCL's \"Cuda failure …\" line: 'out of memory' means "
            "the GPU was full when NCCL allocated its buffers (lower the micro-batch or sequence "
            "lengths, or vLLM's gpu_memory_utilization where it shares the GPU); 'peer access is not "
            "supported' calls for NCCL_P2P_DISABLE=1; 'unknown error' (999) is the driver or the GPU "
            "(nvidia-smi, the kernel log)"
        )
    else:
        what = f"NCCL failed: {g.get('error', '').strip() or 'see the message'}"
        fix = (
            "run once with NCCL_DEBUG=INFO; check that every rank has its own GPU and that "
            "NCCL_* variables (NCCL_SOCKET_IFNAME, NCCL_P2P_DISABLE) fit this machine"
        )
    return [finding(sig.rule, ms, log, what, fix)]


def _nccl_out_of_memory(m: Match, log: Log) -> bool:
    """NCCL's "unhandled cuda error" whose next lines (NCCL's "Last error:") say CUDA ran out of
    memory: an allocation of NCCL's, the GPU full (the out-of-memory table's NCCL form)."""
    nccl = oom_form("nccl").pattern
    if nccl.search(m.text):
        return True
    if not log.head or m.line_no <= 0:
        return False
    after = log.head[: 1 << 20].split(b"\n")[m.line_no : m.line_no + 6]
    return any(nccl.search(line[:4096].decode("utf-8", errors="replace")) for line in after)


def _alloc_conf(ms: list[Match], log: Log) -> list[Draft]:
    g, ctx = ms[0].groups, log.ctx
    option = g.get("option") or g.get("key") or ""
    conf = confirm(ms[0].signature.confirm_map, ctx, ms[0].signature.rule)
    kb = ctx.kb if ctx is not None else knowledge()
    known = [o["name"] for o in kb.allocator.get("options", [])]
    close = difflib.get_close_matches(option, known, n=1)
    what = f"torch rejected the allocator option '{option}'" + (
        f" (did you mean '{close[0]}'?)" if close else ""
    )
    fix = conf.fix or (
        f"replace '{option}' with '{close[0]}' in PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF"
        if close
        else f"remove '{option}' from PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF"
    )
    return [finding("ALC001", ms, log, what, fix, conf, option=option)]


def _divisors(n: int, limit: int = 8) -> list[int]:
    """The first ``limit`` divisors of ``n`` above 1, found up to sqrt(n) (n is capped)."""
    if n < 2 or n > 10**12:
        return []
    small = [d for d in range(2, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small), n})[:limit]


def _batch(ms: list[Match], log: Log) -> list[Draft]:
    sig, g = ms[0].signature, ms[0].groups
    conf = confirm(sig.confirm_map, log.ctx, sig.rule)
    gen = int(g["num_generations"])
    if gen < 2:  # 0 or 1 generations: TRL refuses that on its own (CFG003)
        what = f"num_generations is {gen}: GRPO needs at least 2 completions per prompt"
        return [finding("CFG003", ms, log, what, "num_generations: 2 or more (e.g. 8)")]
    if sig.id == "generation-batch-not-divisible":
        total = int(g["generation_batch_size"])
        what = f"generation_batch_size {total} does not split into groups of {gen}"
        fix = (
            f"generation_batch_size {math.ceil(total / gen) * gen} (a multiple of {gen} and "
            "of the global batch)"
            + (f", or num_generations among {_divisors(total)}" if _divisors(total) else "")
        )
    else:
        factors = [int(x) for x in re.findall(r"\d{1,12}", g["batch"])]
        total = math.prod(factors)
        what = (
            f"the {g['split']} batch of {total} completions ({g['batch']}) does not split "
            f"into groups of num_generations={gen}"
        )
        per_device = factors[0] if "*" in g["batch"] else factors[1] if len(factors) > 1 else 1
        others = total // per_device if per_device else total
        step = gen // math.gcd(others, gen) if others else gen  # per_device must be a multiple
        near = [b for b in ((per_device - 1) // step * step, (per_device // step + 1) * step) if b > 0]
        fix = (
            " or ".join(
                part
                for part in (
                    f"num_generations among {_divisors(total)}" if _divisors(total) else "",
                    f"per_device_{g['split']}_batch_size {' or '.join(map(str, near))}" if near else "",
                )
                if part
            )
            or f"a batch that is a multiple of num_generations ({gen})"
        )
    return [finding(sig.rule, ms, log, what, conf.fix or fix, conf)]


def _unused(ms: list[Match], log: Log) -> list[Draft]:
    ctx = log.ctx
    conf = confirm(ms[0].signature.confirm_map, ctx, ms[0].signature.rule)
    items = re.findall(r"'([^']*)'", ms[0].groups.get("arguments", ""))
    flags = [i.lstrip("-") for i in items if i.startswith("-")]
    names = flags if flags else items  # command-line flags (with values), or config keys
    if classes.launcher_local_rank(items):
        return classes.as_entry(ms, log, classes.LOCAL_RANK_ENTRY)  # the launcher's, not TRL's
    notes = []
    for name in names:
        entry = (ctx.kb if ctx is not None else knowledge()).config_key(name.replace("-", "_"))
        if entry and entry.get("until"):
            notes.append(
                f"{name} was removed in TRL {entry['until']}"
                + (f" (now {entry['replaced_by']})" if entry.get("replaced_by") else "")
            )
    trl = ctx.version("trl") if ctx else None
    what = f"TRL{' ' + trl if trl else ''} does not know {', '.join(names) or 'some arguments'}"
    if notes:
        what += ": " + "; ".join(notes)
    return [
        finding(
            "CFG001",
            ms,
            log,
            what,
            conf.fix
            or "remove or rename them (envdoctor check "
            "--config FILE checks every key against the installed TRL)",
            conf,
        )
    ]


def _api_drift(ms: list[Match], log: Log) -> list[Draft]:
    from envdoctor.triage.structural import api_drift

    return api_drift(ms, log)


def _call_signature(ms: list[Match], log: Log) -> list[Draft]:
    """A reward function's signature (TRI007), else API drift between two packages (TRI009)."""
    drafts = classes.call_signature(ms, log)
    return _api_drift(ms, log) if drafts and drafts[0].rejected else drafts


HANDLERS: dict[str, Callable[[list[Match], Log], list[Draft]]] = {
    "device-mismatch": _device_mismatch,
    "rotary-size-mismatch": _rotary,
    "vllm-device-unavailable": _vllm_device,
    "cuda-oom": _oom,
    "vllm-no-cache-memory": _vllm_memory,
    "vllm-kv-cache-too-small": _vllm_memory,
    "vllm-free-memory-below-utilization": _vllm_memory,
    "nccl-timeout": _nccl,
    "nccl-watchdog-hang": _nccl,
    "nccl-error": _nccl,
    "alloc-conf-unrecognized": _alloc_conf,
    "batch-not-divisible": _batch,
    "generation-batch-not-divisible": _batch,
    "unused-arguments": _unused,
    "vllm-server-not-up": classes.server,
    "vllm-server-refused": classes.server,
    "vllm-server-unreachable": classes.server,
    "vllm-server-not-trl": classes.server_not_trl,
    "extension-abi-mismatch": classes.extension_abi,
    "cuda-toolkit-mismatch": classes.cuda_toolkit,
    "api-drift-import": _api_drift,
    "api-drift-attribute": _api_drift,
    "call-signature": _call_signature,
    "nccl-duplicate-gpu": classes.duplicate_gpu,
    "cli-usage-error": classes.usage_error,
    "dataparallel-replica": classes.dataparallel_replica,
    "cuda-error-under-cap": classes.cuda_error_under_cap,
    "vllm-sampler-warmup-oom": classes.sampler_warmup,
    "legacy-locale-codec": locale_codec.legacy_codec,
}


def _handle(ms: list[Match], log: Log) -> list[Draft]:
    """The drafts of a signature's own handler for ``ms``."""
    return (HANDLERS.get(ms[0].signature.id) or _generic)(ms, log)


def _mark_consequences(drafts: list[Draft]) -> None:
    """An NCCL failure after another error is that error's consequence, not the cause."""
    for i, d in enumerate(drafts):
        f = d.finding
        if f.rule != "TRI002":
            continue
        first = next(
            (p for p in drafts[:i] if p.finding.severity == Severity.ERROR and p.finding.rule != "TRI002"),
            None,
        )
        if first is not None:
            rank = f", rank {first.rank}" if first.rank is not None else ""
            d.finding = Finding(
                f.rule,
                Severity.WARNING,
                f"{f.message} — most likely a consequence of {first.finding.rule} at line {first.line}{rank}",
                f"fix {first.finding.rule} first",
                {**f.evidence, "consequence_of": first.line},
            )


def _nccl_last_error(drafts: list[Draft], by_sig: Mapping[str, list[Match]]) -> None:
    """NCCL's error names its cause on the lines it prints after "Last error:"; where a catalogue
    entry (TRI011) was found on such a line just below, the generic NCCL finding is that entry's
    symptom: a warning that points at it, not an error of its own with a generic fix."""
    at = {m.line_no: m for ms in by_sig.values() for m in ms}
    for i, d in enumerate(drafts):
        f = d.finding
        if f.rule != "TRI002" or f.severity != Severity.ERROR:
            continue
        detail = next(
            (
                p
                for p in drafts[i + 1 :]
                if p.finding.rule == "TRI011"
                and 0 < p.line - d.line <= 8
                and (m := at.get(p.line)) is not None
                and any("Last error" in line for line in list(m.context)[-3:])
            ),
            None,
        )
        if detail is not None:
            d.finding = Finding(
                f.rule,
                Severity.WARNING,
                f"{f.message} — NCCL's own last error (line {detail.line}) names the cause: "
                f"{detail.finding.rule} at line {detail.line}",
                f"fix {detail.finding.rule} (line {detail.line}) first",
                {**f.evidence, "detail_at": detail.line},
            )


def _with_versions(ctx: Context | None, versions: Mapping[str, LogVersion]) -> Context | None:
    """The context that advice and confirmation read: the log's versions in place of this
    machine's packages (``logversions.facts_for_advice``); a range inferred from the traceback's
    frames is no version to advise on (``logversions.shown``)."""
    if not shown(versions):
        return ctx
    facts = facts_for_advice(ctx.facts if ctx is not None else None, dict(versions))
    if ctx is None:
        return Context(facts=facts, network=False)  # type: ignore[arg-type]
    return Context(
        facts=facts,  # type: ignore[arg-type]
        plan=ctx.plan,
        kb=ctx.kb,
        network=False,
        options=ctx.options,
    )


def diagnose_scan(
    result: ScanResult, ctx: Context | None = None, versions: Mapping[str, LogVersion] | None = None
) -> list[Finding]:
    """``diagnose`` of a whole ``scan`` result, with the versions its log shows (``versions``:
    ``scan_versions(result)`` when the caller has them already)."""
    return diagnose(
        result.matches,
        ctx,
        counts=result.counts,
        lines=result.lines,
        last_line=result.last_line,
        versions=scan_versions(result) if versions is None else versions,
        # a log that fits in its head (a pasted excerpt, an issue's text) is read for symptoms in
        # prose; a run's big log has its error lines found by the anchors
        head=result.head if result.bytes_read <= len(result.head) else b"",
    )


def scan_versions(result: ScanResult) -> dict[str, LogVersion]:
    """The package versions a scanned log shows (its head and its version lines), and for the
    packages it does not show, the release ranges its traceback's frames fit
    (``frameversions.with_inferred``)."""
    from envdoctor.triage.frameversions import with_inferred

    return with_inferred(result.matches, from_log(result.head, version_lines(result.matches)))


def version_lines(matches: Sequence[Match]) -> list[tuple[int, str]]:
    """The lines of the version hints, for ``logversions.from_log``."""
    return [
        (m.line_no, split_prefix(m.text)[0])
        for m in matches
        if m.signature.id in ("package-version", "vllm-version")
    ]


def _own_api(d: Draft) -> bool:
    """A catalogue finding, on a log that shows no versions, whose entry's trigger is the user's own
    config or code (a GRPOConfig key left to a CFG rule, a triage_only entry: a trainer argument, a
    reward function's signature): its symptom names the key or the call itself, where an entry about
    a pairing of releases needs the log's versions to tell which side broke."""
    from envdoctor.triage import catalogue

    entry = catalogue.catalogue()[2].get(d.finding.evidence.get("signature", ""))
    if entry is None or d.finding.evidence.get("versions_match") is not None:
        return False
    if str(getattr(entry, "rule", "")).startswith("CFG") or classes.versionless(entry):
        return True
    # a triage_only entry about the user's code names at most TRL's range; one that pairs two
    # releases (a wrapper library with TRL) needs the log's versions like any pairing
    packages = set(getattr(entry, "packages", {}) or {})
    return bool(getattr(entry, "triage_only", False)) and packages <= {"trl"}


#: own signatures whose handler rejects a line because the pair is not one it knows (TRL with
#: vLLM, a reward function), not because the line's evidence contradicts a cause
_PAIRING_HANDLERS = ("api-drift-import", "api-drift-attribute", "call-signature")


def _unshown(d: Draft, rejected_by: Mapping[int, Match]) -> bool:
    """A catalogue finding whose releases the log does not show (a warning: the entry depends on
    them), on a line a drift handler found no known pair for, raised in a package's code — not in
    the user's own code (no release pairing explains that), not an import "from 'trl' (unknown
    location)" (a directory shadowing the package), not a line whose own handler's evidence
    contradicts a cause (a device mismatch with ``cpu``)."""
    m = rejected_by.get(d.line)
    if m is None or m.signature.id not in _PAIRING_HANDLERS or "(unknown location)" in d.finding.message:
        return False
    raised = frames(m)
    if raised and "-packages/" not in raised[-1]:
        return False  # the user's own code
    return d.finding.evidence.get("versions_match") is None


def _one_per_line(
    drafts: list[Draft], by_sig: Mapping[str, list[Match]], rejected: Mapping[int, Match]
) -> list[Draft]:
    """A catalogue finding (TRI011) only on a line no own signature matched (its handler knows the
    numbers, and when it found nothing to report, so it is) — or one whose handler rejected it
    (``rejected``) when the log's versions confirm the entry, or when the entry's trigger is the
    user's own config or code (``_own_api``) — and one per line: among entries, the one the
    versions confirm; where they confirm none, the one that rests on the fewest release ranges the
    log does not show (a general entry before one about a single release)."""
    own = {
        m.line_no
        for ms in by_sig.values()
        for m in ms
        if m.signature.rule != "TRI011" and not m.signature.fallback and not m.signature.hint
    }

    def rank(d: Draft) -> tuple[int, bool, int]:
        ev = d.finding.evidence
        return (d.finding.severity.rank, ev.get("versions_match") is True, -ev.get("unshown_bounds", 0))

    best: dict[int, Draft] = {}
    for d in drafts:
        confirmed = d.finding.evidence.get("versions_match") is True
        if d.finding.rule == "TRI011" and (
            d.line not in own
            or d.finding.evidence.get("dispatched_by")  # an own signature's handler handed it on
            or d.line in rejected
            and (confirmed or _own_api(d) or _unshown(d, rejected))
        ):
            old = best.get(d.line)
            if old is None or rank(d) > rank(old):
                best[d.line] = d
    return [d for d in drafts if d.finding.rule != "TRI011" or best.get(d.line) is d]


def _warned(m: Match) -> bool:
    """An exception quoted inside a line that names a warning before it ("Failed to import …:
    ImportError: …" after "warning"), or closing the traceback Python's logging printed for a
    record it could not write: a run that goes on, not its failure."""
    from envdoctor.triage.logging_errors import printed_by_logging

    if printed_by_logging(m):
        return True
    if m.signature.id != "quoted-exception":
        return False
    at = m.text.find(m.groups.get("exception", "")) if m.groups.get("exception") else -1
    return "warn" in m.text[: max(at, 0)].lower()


def _first_failure(by_sig: Mapping[str, list[Match]], drafts: list[Draft]) -> Match | None:
    """The log's first failing line: an exception not logged as a warning before one that is,
    the root before torch's wrappers (ChildFailedError …), the earlier line first."""
    lines = [m for ms in by_sig.values() if ms[0].signature.fallback for m in ms if not _warned(m)]
    lines += [m for d in drafts if d.rejected for m in d.rejected[:1]]
    if not lines:
        return None
    return min(
        lines,
        key=lambda m: (
            warning_line(m),
            any(s in m.text for s in _SECONDARY),
            m.signature.id == "quoted-exception",  # an exception on a line of its own first
            m.line_no,
            m.signature.id == "failure-line",
        ),
    )


def _repeated_with_frames(by_sig: Mapping[str, list[Match]], first: Match) -> list[Match]:
    """Later failing lines with the same text as ``first`` whose kept lines hold frames: the
    exception printed again under its traceback (a wrapper logs the message, then the stack)."""
    if any('File "' in line for line in first.context):
        return []
    text = split_prefix(first.text)[0].strip()
    return [
        m
        for m in by_sig.get(first.signature.id, [])
        if m.line_no > first.line_no
        and split_prefix(m.text)[0].strip() == text
        and any('File "' in line for line in m.context)
    ][:2]


def diagnose(
    matches: Sequence[Match],
    ctx: Context | None = None,
    counts: Mapping[str, int] | None = None,
    lines: int = 0,
    last_line: Mapping[str, int] | None = None,
    versions: Mapping[str, LogVersion] | None = None,
    head: bytes = b"",
) -> list[Finding]:
    """``_diagnose``, with a catalogue finding of a data rule's own failure under that rule's id
    (``dataids``)."""
    from envdoctor.triage.dataids import named

    return named(_diagnose(matches, ctx, counts, lines, last_line, versions, head))


def _diagnose(
    matches: Sequence[Match],
    ctx: Context | None = None,
    counts: Mapping[str, int] | None = None,
    lines: int = 0,
    last_line: Mapping[str, int] | None = None,
    versions: Mapping[str, LogVersion] | None = None,
    head: bytes = b"",
) -> list[Finding]:
    """Findings for ``matches`` (from ``scan``), judged against ``ctx`` when given.

    ``counts`` (``ScanResult.counts``) gives the number of lines per signature when the scan kept
    only the first matches of a frequent one; ``lines`` and ``last_line`` (the log's length, the
    last line of each signature) tell whether a wait ended well. ``versions``: the packages the
    log shows (``logversions.from_log``; read from the version hints among ``matches`` when not
    given); advice and confirmation use them in place of this machine's. ``head``: the log's first
    MiB, where a catalogue symptom on a line without an anchor is looked for when nothing else is
    named (``structural.head_symptoms``).
    """
    if versions is None:
        from envdoctor.triage.frameversions import with_inferred

        versions = with_inferred(matches, from_log(b"", version_lines(matches)))
    ctx = _with_versions(ctx, versions)
    from envdoctor.triage.rejoin import rematch

    matches = [*matches, *rematch(matches, head)]  # messages broken by whitespace, as they read
    by_sig: dict[str, list[Match]] = {}
    for m in sorted(matches, key=lambda x: x.line_no):
        by_sig.setdefault(m.signature.id, []).append(m)
    last = dict(last_line or {})
    for sid, ms in by_sig.items():
        last[sid] = max(last.get(sid, 0), ms[-1].line_no)
    log = Log(by_sig, counts or {}, ctx, lines, last, versions, head)
    drafts: list[Draft] = []
    for ms in by_sig.values():
        if not ms[0].signature.fallback and not ms[0].signature.hint:
            handler = HANDLERS.get(ms[0].signature.id) or (
                classes.known_failure if ms[0].signature.rule == "TRI011" else _generic
            )
            drafts.extend(handler(ms, log))
    rejected = {m.line_no: m for d in drafts for m in d.rejected}
    known = _one_per_line([d for d in drafts if not d.rejected], by_sig, rejected)
    if not known:
        from envdoctor.triage.structural import (
            bare_message,
            cut_traceback,
            diagnose_failure,
            head_symptoms,
            repr_exception,
            self_contradiction,
        )

        first = _first_failure(by_sig, drafts)
        found = diagnose_failure(first, log) if first is not None else None
        if found is None and first is not None:
            for again in _repeated_with_frames(by_sig, first):  # "Full traceback:" after the message
                found = diagnose_failure(again, log)
                if found is not None:
                    break
        if found is None and head:
            from envdoctor.triage.bounds import refused_setting

            found = refused_setting(head, log, first)  # a setting refused with its bound (TRI039)
        if found is None and first is not None:
            from envdoctor.triage.structural import later_shadow

            found = later_shadow(by_sig, first, log)  # a folder in a package's place, shown later
        if found is None and head:
            from envdoctor.triage.statedict import answer as state_dict

            found = state_dict(head, log)  # torch's size-mismatch list, read across wraps by role
        if found is None and head:
            from envdoctor.triage.remotecode import answer as refused_checkpointing

            found = refused_checkpointing(head, log)  # a class another code of its name refuses with
        if found is None and head:
            from envdoctor.triage.toollines import unanchored

            # a shipped signature's line that no anchor found, said by its own handler (its numbers,
            # its knob) before the catalogue's symptoms read in prose on that line or another
            found = unanchored(head, log, _handle)
        if found is None and (first is not None or head):
            found = head_symptoms(head, log)  # a symptom on a line no anchor finds
        if found is None and head:
            from envdoctor.triage.hydra import from_head

            found = from_head(head, log, None)  # Hydra's own lines, without a traceback
        if found is None and head:
            found = self_contradiction(head, log)  # a check that refuses what it allows
        if found is None and head:
            found = bare_message(head, log)  # Python's message quoted without its exception's name
        if found is None and head:
            found = repr_exception(head, log)  # an exception shown as its constructor: ValueError("…")
        if (found is None or found.finding.severity != Severity.ERROR) and first is None and head:
            from envdoctor.triage.raisesites import quoted

            lifted = quoted(head, log)  # a message a later release no longer raises, quoted without its type
            if lifted is not None:
                return [lifted.finding] + ([found.finding] if found is not None else [])
        if found is None and first is None and head:
            found = _quoted_refusal(head, log)  # a package's refusal quoted without its type
        if found is None and first is None and head:
            from envdoctor.triage.fixhist import quoted_fixed

            found = quoted_fixed(head, log)  # such a message whose raising function a later fix changed
        if found is None and first is None and head:
            from envdoctor.triage.fixhist import generated_in

            found = generated_in(head, log)  # a module Unsloth generated that does not compile
        if found is None and head:
            from envdoctor.triage.structclass import generated_loading

            found = generated_loading(head, log)  # unsloth_zoo's compiler: a generated module's unbound name
        if found is None and head:
            from envdoctor.triage.programs import from_head as program_from_head

            found = program_from_head(head, log)  # a program not on PATH, quoted by a wrapper
        if found is None and head:
            from envdoctor.triage.toollines import from_head as tool_lines

            # pip, a device-side index assertion, the OOM killer; a bare SIGKILL only where no other
            # exception is there to name, or a wrapper's re-raise of the process it killed
            wrapped = first is None or any(w in first.text for w in _SECONDARY)
            found = tool_lines(head, log, killed_ok=wrapped)
            # the host's own lines: P2P, ulimit -u, /dev/shm, a version assert (TRI025-027, TRI019)
            found = found or hostenv.from_head(log, first.line_no if first is not None else None)
        if found is None and first is None and head:
            found = cut_traceback(head, log)  # an excerpt cut before its exception line
        if found is None and first is None and head:
            from envdoctor.triage.usercode import caught_in_reward

            found = caught_in_reward(head, log)  # a reward function's report of what it caught
        if found is not None:
            return [found.finding]
        if first is not None and logged_as_warning(first):
            # the message of a warning Python printed (warnings.warn), or a line a logger wrote at
            # warning level (vLLM's "WARNING … Failed to import from vllm._C …"): nothing raised
            return []
        if first is None:
            return []
        if _text_not_crash(first, log):
            return []
        from envdoctor.triage.raisesites import placed

        return [placed(unknown_finding([first], log), first, log)]
    if all(d.finding.severity != Severity.ERROR for d in known):
        # a likely answer; a raise a later release lifted is the certain one
        from envdoctor.triage.raisesites import lifted_for, quoted

        first = _first_failure(by_sig, drafts)
        lifted = lifted_for(first, log) if first is not None else quoted(head, log) if head else None
        known += [lifted] if lifted is not None else []
    known.sort(key=lambda d: d.line)
    known = _without_destructor_noise(known, by_sig)
    worst: dict[str, int] = {}  # a rule's warning is dropped when the same rule also errs
    for d in known:
        level = d.finding.severity.rank
        worst[d.finding.rule] = max(worst.get(d.finding.rule, level), level)
    known = [d for d in known if d.finding.severity.rank == worst[d.finding.rule]]
    _mark_consequences(known)
    _nccl_last_error(known, by_sig)
    return [d.finding for d in known]


def _in_destructor(m: Match) -> bool:
    """``m`` lies in the traceback Python prints for an exception a ``__del__`` raised ("Exception
    ignored in: <function X.__del__ …>"): noise of an object the real failure left half built."""
    lines = list(m.context)
    start = max(
        (i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), default=-1
    )
    return start > 0 and "Exception ignored in" in lines[start - 1]


def _without_destructor_noise(known: list[Draft], by_sig: Mapping[str, list[Match]]) -> list[Draft]:
    """The drafts less those read from a destructor's traceback after an earlier error: the failure
    is the error (DeepSpeed refusing the CUDA toolkit), not the ``__del__`` of the optimizer it left
    without its kernel ("'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'")."""
    at = {m.line_no: m for ms in by_sig.values() for m in ms}
    first_error = min((d.line for d in known if d.finding.severity == Severity.ERROR), default=None)
    return [
        d
        for d in known
        if first_error is None
        or d.line <= first_error
        or (m := at.get(d.line)) is None
        or not _in_destructor(m)
    ]


def _text_not_crash(first: Match, log: Log) -> bool:
    """An exception's words with no traceback before them (a docstring's "Raises: ValueError: …", a
    model's generated text, a message a program printed and went on) in a log that shows training
    steps after them: the run did not end there, so nothing unrecognised crashed it."""
    from envdoctor.triage.missing import went_on

    traced = any(
        "Traceback (most recent call last)" in line or 'File "' in line for line in first.context[-40:]
    )
    return not traced and went_on(log, first.line_no)


def _quoted_refusal(head: bytes, log: Log) -> Draft | None:
    """A refusal a short paste quotes without its exception's name ("Total number of attention heads
    (40) must be divisible by tensor parallel size (6)"): a line whose whole message one stack
    package's raise sites print, all of one exception class, read as that exception and answered by
    the package's own checks as a traceback's would be (TRI012; a split's divisors, ``guards``).
    Read only where no failing line was found, in a paste of at most 40 lines without a traceback."""
    from envdoctor.knowledge.raise_sites import locate
    from envdoctor.triage import guards, refusal
    from envdoctor.triage.raisesites import quoted_lines
    from envdoctor.triage.traceback_model import Traceback

    if b"Traceback (most recent call last)" in head or b'File "' in head:
        return None  # a traceback's excerpt: its own readers (a cut one: cutguard)
    for m, tb in quoted_lines(head):
        hits = [h for h in locate(tb.message) if h.complete]
        kinds = {(h.site.package, h.site.exc) for h in hits}
        if len(kinds) != 1:
            continue  # no raise prints it whole, or several packages / classes do
        t = Traceback(exc_type=kinds.pop()[1], message=tb.message, line_no=tb.line_no)
        for answer in (
            refusal.vllm_validation,
            guards.from_traceback,
            refusal.package_refusal,
            guards.any_check,
        ):
            d = answer(t, m, log)  # as structural.diagnose_failure tries a package's own checks
            if d is not None:
                return d
    return None
