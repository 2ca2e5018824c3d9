"""A run in TRL's server mode whose launch lines start no vLLM server (LAY023): from TRL 0.18.0
through 0.29.x ``vllm_mode`` defaults to "server", so ``use_vllm=True`` alone makes the trainer
wait for a ``trl vllm-serve`` that nothing starts."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.layout import _procs_flag, _with_env, in_process_unseen, run_lines, with_option
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.checks.script_remedy import keyword_edits
from envdoctor.findings import Remedy
from envdoctor.knowledge import release_said
from envdoctor.plan.interface import SERVER_START, from_code
from envdoctor.plan.layout import _remote_host
from envdoctor.plan.model_name import model_name

#: GRPOConfig keys that say the user set up a server on purpose (host, port, URL)
SERVER_KEYS = ("vllm_server_host", "vllm_server_port", "vllm_server_base_url")
#: a shell script read for the launch is searched for a server's start up to this size
MAX_SCRIPT_BYTES = 1 << 20


def _timeout(ctx: Context) -> str:
    """``vllm_server_timeout`` as the run gives it, else TRL's default for the release."""
    given = ctx.plan.config.get("vllm_server_timeout")
    if given is not None:
        return f"{given} s"
    rows = (ctx.kb.trl.get("vllm_server") or {}).get("grpo_config_defaults") or []
    trl = ctx.version("trl")
    row = next((r for r in rows if versions.satisfies(trl, str(r.get("trl", "")))), None)
    value = (row or {}).get("vllm_server_timeout")
    return f"{float(value):g} s" if value is not None else "vllm_server_timeout"


def _started_elsewhere(ctx: Context) -> str | None:
    """Where the run's own files start (or tell the user to start) a vLLM server that is no
    launch line of envdoctor's: another line of the launch that names vLLM (``python
    my_server.py --vllm``), the training script's text (a notebook's ``!trl vllm-serve … &``, a
    subprocess, a comment), a shell script read for the launch. None when nothing does."""
    trainer = ctx.plan.trainer
    for lx in ctx.plan.launches:
        if lx is not trainer and "vllm" in lx.raw.lower():
            return f"the launch line `{lx.raw}`"
    script = ctx.plan.script
    if script is not None and script.server_start:
        return script.server_start
    seen: set[str] = set()
    for lx in ctx.plan.launches:
        path = (lx.source or "").rsplit(":", 1)[0]
        if not path or path in seen:
            continue
        seen.add(path)
        try:
            with open(path, "rb") as fh:
                text = fh.read(MAX_SCRIPT_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if "vllm" in line and SERVER_START.search(line):
                return f"{path}:{number}"
    return None


def _implicit(ctx: Context) -> bool:
    """Whether the run never chose server mode: no ``vllm_mode`` and no server key set."""
    cfg = ctx.plan.config
    return "vllm_mode" not in cfg and not any(k in cfg for k in SERVER_KEYS)


@rule("LAY023", needs=("vllm", "trl-layout"))
def server_never_started(ctx: Context) -> Iterator[Hit]:
    lay, plan = ctx.layout, ctx.plan
    trainer = plan.trainer
    if lay.generation_mode != "server" or lay.generation_unknown or trainer is None:
        return
    if ctx.facts.live and ctx.network:
        return  # the server was asked: LAY008 / LAY013 say what came back
    trl = ctx.version("trl")
    if not ctx.kb.feature("vllm_colocate_mode", trl):
        return  # before 0.18 (or TRL unknown) server mode is the only one (or not TRL's to say)
    if plan.server is not None or (lay.server is not None and lay.server.source != "config"):
        return  # a server line, or a vLLM server already up on a GPU
    script = plan.script
    if script is not None and (script.own_grpo or script.vllm_engine or script.patched_by):
        return  # a trainer of the repository's own, an engine it builds, Unsloth's patched trainer
    if in_process_unseen(ctx):
        return  # Unsloth may start vLLM in the trainer's process (fast_inference): no server then
    if _remote_host(ctx.facts, plan):
        return  # another machine's server: started there
    elsewhere = _started_elsewhere(ctx)
    if elsewhere:
        return
    implicit = _implicit(ctx)
    said = release_said("trl", trl, ctx.kb)
    host = str(plan.config.get("vllm_server_base_url") or "")
    if not host:
        port = plan.config.get("vllm_server_port", 8000)
        host = f"{plan.config.get('vllm_server_host', '0.0.0.0')}:{port}"
    if "vllm_mode" in plan.config:
        origin = plan.config_origin.get("vllm_mode")
        why = f"vllm_mode is {plan.config['vllm_mode']!r}{f' ({origin})' if origin else ''}"
    else:
        why = f'vllm_mode is not set, and {said} defaults it to "server"{_changed(ctx)}'
        keys = [k for k in SERVER_KEYS if k in plan.config]
        if keys:
            why += f" (the config sets {', '.join(keys)} for a server)"
    message = (
        f"{why}: the trainer loads the model, then waits vllm_server_timeout ({_timeout(ctx)}) for "
        f"a TRL vLLM server at {host} and fails with a ConnectionError; {_launches_said(ctx)} no "
        "vLLM server (`trl vllm-serve`)"
    )
    if not implicit:
        message += "; if it is started elsewhere (another terminal, before this run), nothing is wrong"
    colocate = _colocate(ctx)
    serve = _serve_first(ctx)
    remedies = [r for r in ((colocate, serve) if implicit else (serve, colocate)) if r is not None]
    by_hand = ""
    if serve is None and (len(ctx.facts.gpus) != 1 or len(ctx.layout.training) != 1):
        by_hand = (
            "start `trl vllm-serve --model <the run's model>` first, on a GPU the trainer does "
            "not use (by hand: envdoctor does not know the model or a free GPU)"
        )
    texts = [r.fix for r in remedies] + ([by_hand] if by_hand else [])
    yield hit(
        message,
        fix="; or ".join(texts),
        remedy=remedies,
        severity=None if implicit else "info",
        mode="server (TRL's default)" if implicit else "server (set)",
        address=host,
        launches=list(run_lines(ctx)),
        **({"by_hand": by_hand} if by_hand else {}),
    )


def _changed(ctx: Context) -> str:
    """`` (TRL 1.0.0 made colocate the default)``: the first release line of the knowledge whose
    default is colocate; "" where none is."""
    for line in ctx.kb.trl.get("trl_lines") or []:
        if line.get("default_vllm_mode") == "colocate":
            low = str(line.get("trl", "")).split(",")[0].lstrip(">=")
            return f" (TRL {low} made colocate the default)"
    return ""


def _launches_said(ctx: Context) -> str:
    """How the finding names the run's launch lines, with its verb: the script read for them,
    the one line, or the lines."""
    read = sorted({lx.via or (lx.source or "").rsplit(":", 1)[0] for lx in ctx.plan.launches} - {""})
    if read:
        return f"the lines read from {', '.join(read)} start"
    if len(ctx.plan.launches) == 1:
        return f"the run's one launch line (`{ctx.plan.launches[0].raw}`) starts"
    return "the run's launch lines start"


def _colocate(ctx: Context) -> Remedy | None:
    """``vllm_mode: colocate``: in the config; where the training script's own GRPOConfig(...)
    call sets ``use_vllm`` and reads no config file, the keyword written into that call."""
    plan = ctx.plan
    script = plan.script
    then = "vLLM then runs in each training process, on its GPU"
    text = f"set vllm_mode: colocate ({then})"
    code = from_code(plan.config_origin.get("use_vllm", ""))
    if "vllm_mode" in plan.config or not code or script is None or script.reads_config:
        return Remedy(config_set={"vllm_mode": "colocate"}, fix=text)
    edits = keyword_edits(script, "use_vllm", 'vllm_mode="colocate", ')
    if not edits:
        return None
    where = ", ".join(f"{e.path} line {e.line}" for e in edits)
    return Remedy(files=edits, fix=f'pass vllm_mode="colocate" to GRPOConfig(...) at {where} ({then})')


def _serve_first(ctx: Context) -> Remedy | None:
    """The server's line first, on a GPU the trainer does not use: an idle one of the machine
    (the trainer's line kept), else the split TRL's docs show (the server on the last GPU, the
    trainer on the others with as many processes). None where the lines cannot say it: the
    model not named, no GPU facts, one GPU, several machines, ``--gpu_ids``."""
    trainer, lay = ctx.plan.trainer, ctx.layout
    model = model_name(ctx)
    if trainer is None or not model or lay.unresolved or lay.num_machines != 1 or not ctx.facts.gpus:
        return None
    free = [g.index for g in ctx.facts.gpus if g.index not in lay.training]
    line = trainer.raw
    if free:
        gpu = free[0]
    else:
        gpus = list(lay.visible)
        if len(gpus) < 2 or "gpu_ids" in trainer.options:
            return None
        gpu, train = gpus[-1], gpus[:-1]
        if lay.launcher in ("accelerate", "torchrun", "deepspeed") or lay.launcher.startswith("trl"):
            line = with_option(trainer, _procs_flag(lay.launcher), str(len(train)))
        elif len(train) > 1:
            train = train[:1]  # one process: one GPU
        line = _with_env(line, "CUDA_VISIBLE_DEVICES", ",".join(map(str, train)))
    srv = f"CUDA_VISIBLE_DEVICES={gpu} trl vllm-serve --model {shlex.quote(model)}"
    then = f"; then {line}" if line != trainer.raw else f", then the trainer ({line})"
    return Remedy(
        launch=(srv, *run_lines(ctx, trainer=line)),
        fix=f"start the server first, on GPU {gpu}, which the trainer does not use: {srv}{then}",
    )
