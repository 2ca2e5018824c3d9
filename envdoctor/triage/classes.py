"""Handlers of the failure classes that need more than their own line: the vLLM server in server
mode, compiled extensions, API drift between TRL and vLLM, reward-function signatures, ranks that
share a GPU, nn.DataParallel replicas, and HAMi's vGPU cap. Each says the cause of *this* run and
its fix, from the log's own words and numbers and, where given, the facts, config and launch line;
what it cannot explain is left to the first-exception answer (TRI003) instead of a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.findings import Severity
from envdoctor.plan.interface import DEFAULT_SERVER_HOST, DEFAULT_SERVER_PORT, server_address
from envdoctor.redact import cut
from envdoctor.triage import knobs
from envdoctor.triage.confirm import confirm, dataparallel, layout_given
from envdoctor.triage.confirm import from_log as from_log_of
from envdoctor.triage.draft import Draft, Log, at_severity, context_has, finding, frames, reject
from envdoctor.triage.interface import Match
from envdoctor.triage.scanner import split_prefix
from envdoctor.triage.traceback import Frame, Traceback, failure, package_of
from envdoctor.units import size_text

# -- the vLLM server (server mode, TRL >= 0.16) ------------------------------------------------

_SERVER_SIGS = ("vllm-server-not-up", "vllm-server-refused", "vllm-server-unreachable")


def _server_address(ms: Sequence[Match], ctx: Context | None) -> str:
    for m in ms:
        g = m.groups
        if "host" in g:
            return f"{g['host']}:{g['port']}"
        if "address" in g:
            return g["address"]
    cfg = ctx.config if ctx is not None else {}
    if cfg.get("vllm_server_base_url"):
        return str(cfg["vllm_server_base_url"])
    if cfg.get("vllm_server_host") or cfg.get("vllm_server_port"):
        return "{}:{}".format(*server_address(cfg, None))
    return f"vllm_server_host:vllm_server_port ({DEFAULT_SERVER_HOST}:{DEFAULT_SERVER_PORT} unless set)"


def _free_for_server(ctx: Context | None) -> str:
    """``CUDA_VISIBLE_DEVICES=…`` naming GPUs the trainer does not use, when the layout says."""
    if ctx is None or not layout_given(ctx) or not ctx.facts.gpus:
        return "CUDA_VISIBLE_DEVICES=<GPUs the trainer does not use>"
    used = set(ctx.layout.visible if dataparallel(ctx.layout) else ctx.layout.training)
    spare = [g.index for g in ctx.facts.gpus if g.index not in used]
    return (
        f"CUDA_VISIBLE_DEVICES={','.join(map(str, spare))}"
        if spare
        else "CUDA_VISIBLE_DEVICES=<a GPU of its own: every GPU here trains>"
    )


def server(ms: list[Match], log: Log) -> list[Draft]:
    """The trainer waited for (or gave up on) a vLLM server that never answered."""
    ctx = log.ctx
    waited = [m for sid in _SERVER_SIGS for m in log.by_sig.get(sid, ())]
    if ms[0].signature.id != min(waited, key=lambda m: m.line_no).signature.id:
        return []  # one finding for all the server's signatures, at the first of them
    up = log.last_line.get("vllm-server-up", 0)
    failed = any(s in log.by_sig for s in ("vllm-server-refused", "vllm-server-unreachable"))
    if up > max(m.line_no for m in waited) and not failed:
        return []  # it came up: waiting a while for it is not a failure
    waited.sort(key=lambda m: m.line_no)
    tries = log.counts.get("vllm-server-not-up", 0)
    address = _server_address(waited, ctx)
    what = f"the trainer is in vLLM server mode and nothing answered at {address}" + (
        f" ({tries} retries)" if tries > 1 else ""
    )
    cfg = ctx.config if ctx is not None else {}
    trl = ctx.version("trl") if ctx is not None else None
    model = cfg.get("model_name_or_path") or "MODEL"
    port = f" --port {str(address).rsplit(':', 1)[-1]}" if re.search(r":\d{1,5}$", address) else ""
    if "vllm_device" in cfg and not cfg.get("vllm_mode"):
        what += (
            f"; the config sets vllm_device, a TRL ≤ 0.15 setting: TRL "
            f"{trl or '≥ 0.16'} no longer starts vLLM inside the trainer"
        )
        fix = (
            "run this recipe with the TRL it was written for (pip install 'trl==0.15.2'), or "
            f"move it to server mode: start `{_free_for_server(ctx)} trl vllm-serve --model "
            f"{model}{port}` first and drop vllm_device"
        )
        return [finding("LAY008", waited, log, what, fix)]
    fix = (
        f"start the server first, on GPUs of its own: `{_free_for_server(ctx)} trl vllm-serve "
        f"--model {model}{port}`, and wait for 'Application startup complete' before "
        f"launching training (same host and port as the trainer's vllm_server_host / "
        f"vllm_server_port or vllm_server_base_url)"
    )
    if trl is None or not versions.below(trl, "0.18.0"):
        fix += "; or set vllm_mode: colocate to run vLLM inside the trainer (TRL ≥ 0.18)"
    return [finding("LAY008", waited, log, what, fix)]


def server_not_trl(ms: list[Match], log: Log) -> list[Draft]:
    """A 404 from the server to TRL's weight-sync endpoints: it is not ``trl vllm-serve``."""
    ctx, first = log.ctx, ms[0]
    if not context_has(first, "init_communicator", "get_world_size", "vllm_client"):
        return reject(ms)
    plain = next(
        (lc.raw for lc in (ctx.plan.launches if ctx is not None else ()) if lc.launcher == "vllm-serve"), None
    )
    what = (
        "the vLLM server answered 404 to TRL's weight-sync endpoint (/get_world_size/ in "
        "init_communicator): it is not `trl vllm-serve` — a plain `vllm serve` has no such "
        "endpoints"
    )
    trl = ctx.version("trl") if ctx is not None else None
    fix = (
        "serve the model with `trl vllm-serve --model MODEL` in place of `vllm serve`"
        + (f" (here: `{plain}`)" if plain else "")
        + f", from the same TRL release as the trainer{f' ({trl})' if trl else ''}"
    )
    return [finding("TRI004", ms, log, what, fix)]


# -- compiled extensions built for another torch -------------------------------------------------

#: path fragment of the library -> distribution
_EXTENSIONS = (
    ("flash_attn", "flash-attn"),
    ("vllm", "vllm"),
    ("xformers", "xformers"),
    ("deepspeed", "deepspeed"),
    ("transformer_engine", "transformer-engine"),
    ("flashinfer", "flashinfer-python"),
    ("bitsandbytes", "bitsandbytes"),
    ("torchvision", "torchvision"),
    ("torchaudio", "torchaudio"),
    ("apex", "apex"),
    ("mamba_ssm", "mamba-ssm"),
    ("causal_conv1d", "causal-conv1d"),
    ("liger_kernel", "liger-kernel"),
    ("unsloth", "unsloth"),
    ("torchcodec", "torchcodec"),
)
_TORCH_SYMBOL = re.compile(r"_ZN?K?(?:3c10|2at|5torch|6caffe2)")
#: a Markdown link a paste made of a file's name (``[x.so](http://x.so/)``): the name it shows
_MD_LINK = re.compile(r"\[(?P<text>[^\[\]()\s]{1,500})\]\((?:https?://)?[^()\s]{0,500}\)")
#: PyTorch's domain libraries: each release is built for one torch release (compiled.companion)
_DOMAIN = ("torchvision", "torchaudio", "torchcodec")


def _library(body: str) -> str:
    head = body[: body.find(": undefined symbol:")]
    token = head.rsplit(None, 1)[-1] if head.split() else head
    return token.lstrip("'\"(").rsplit("/", 1)[-1][:200]


def _loader_line(first: Match) -> str:
    """The loader's message of ``first``: its line, joined to the line before where the symbol
    stands on a line of its own (``…/_C.abi3.so:`` then ``undefined symbol: _ZN…``); Markdown
    links a paste made of the file's name read as the name; '' where no library is named."""
    body = first.text
    if first.groups.get("next_symbol"):
        prev = next((c for c in reversed(first.context) if c.strip()), "")
        prev = split_prefix(prev)[0].strip()
        if not re.search(r"\.so(?:\.\d{1,6}){0,3}:?$", prev):
            return ""
        body = f"{prev.rstrip(':')}: {split_prefix(body)[0].strip()}"
    return _MD_LINK.sub(lambda g: g.group("text"), body)


def _wrapped_symbol(first: Match, log: Log) -> str | None:
    """The symbol on the line after a loader's message that ends at "undefined symbol:" (the
    terminal wrapped it there), or None where that line is no symbol's name."""
    from envdoctor.triage.raisesites import continuation

    more = continuation(log, first.line_no, 1)
    word = more[0].strip() if more else ""
    return word if re.fullmatch(r"[A-Za-z_][\w$.@]{0,300}", word) else None


def _cuda_wheel_tag(version: str) -> str:
    """PyTorch's index folder for a CUDA release: ``12.1`` -> ``cu121``."""
    major, _, minor = version.partition(".")
    return f"cu{major}{minor.split('.')[0] or '0'}"


def cuda_toolkit(ms: list[Match], log: Log) -> list[Draft]:
    """An extension's build refused a CUDA toolkit of another release than torch's own (TRI023)."""
    first = ms[0]
    if "accepting this combination" in first.text or "DS_SKIP_CUDA_CHECK" in first.text:
        return reject(ms)  # DeepSpeed's print for compatible minor releases: no failure
    g = first.groups
    toolkit, built = g.get("installed") or g.get("detected"), g.get("torch") or g.get("compiled")
    if not toolkit or not built:
        return reject(ms)
    body = " ".join([*first.context[-12:], first.text]).lower()
    who = "DeepSpeed's op builder" if "deepspeed" in body or "op builder" in body else "torch's cpp_extension"
    ext = next((d for frag, d in _EXTENSIONS if frag in body and d != "deepspeed"), None)
    what = (
        f"{who} will not compile {ext + chr(39) + 's' if ext else 'the'} CUDA extension: the toolkit found "
        f"(nvcc, CUDA_HOME) is CUDA {toolkit}, torch was built with CUDA {built}"
    )
    fix = (
        f"point CUDA_HOME (and PATH's nvcc) at a CUDA {built} toolkit, torch's own "
        f"(e.g. export CUDA_HOME=/usr/local/cuda-{'.'.join(built.split('.')[:2])}), or install the torch "
        f"build for CUDA {toolkit} where PyTorch publishes one (pip install torch==<the same release> "
        f"--index-url https://download.pytorch.org/whl/{_cuda_wheel_tag(toolkit)}); then install the "
        "package again"
    )
    return [finding("TRI023", ms, log, what, fix)]


def extension_abi(ms: list[Match], log: Log) -> list[Draft]:
    first, ctx = ms[0], log.ctx
    symbol = first.groups.get("symbol") or first.groups.get("next_symbol") or ""
    body = _loader_line(first)
    if not body or symbol and not _TORCH_SYMBOL.match(symbol):
        return reject(ms)  # no library named, or not one of torch's symbols: no known cause
    library = _library(body)
    dist = next((d for frag, d in _EXTENSIONS if frag in body.lower()), None)
    if not symbol:  # the symbol on the next line (a terminal's wrap), else the log cuts the message
        wrapped = _wrapped_symbol(first, log)
        if wrapped is None:
            return _symbol_cut(ms, log, dist, library)
        symbol = wrapped
        if not _TORCH_SYMBOL.match(symbol):
            return reject(ms)  # not one of torch's symbols: no known cause here (the catalogue's)
    abi = (
        "the missing name uses the C++11 std::string ABI (__cxx11): the extension was built "
        "with the C++11 ABI, the torch in use with the old one, or for another torch release"
        if "__cxx11" in symbol
        else "the missing name uses the old std::string ABI: the extension was built with the "
        "pre-C++11 ABI, the torch in use with the new one, or for another torch release"
        if re.search(r"[RKP]Ss", symbol)
        else "torch does not export that symbol: the extension was built against another torch release"
    )
    # the versions of the run: the log's, or a snapshot's (--facts: the node that ran it); this
    # machine's live torch is not the run's where the log shows none (set 23's c002 / d002)
    runs = ctx is not None and (not ctx.facts.live or bool(from_log_of(ctx, "torch")))
    torch_v = ctx.version("torch") if ctx is not None and runs else None
    dist_v = ctx.version(dist) if ctx is not None and runs and dist else None
    here = ", ".join(f"{n} {v}" for n, v in (("torch", torch_v), (dist, dist_v)) if v)
    what = f"{dist or library} does not load: {library} needs {symbol[:80]} from torch; {abi}" + (
        f" (here: {here})" if here else ""
    )
    torch_desc = f"torch {torch_v}" if torch_v else "the run's own torch"
    read_them = (
        ""
        if torch_v
        else " (read where the run ran: python -c 'import torch; print(torch.__version__, "
        "torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI)'; the log does not show them, and this "
        "machine's torch is not the run's)"
    )
    if dist == "vllm":
        conf = confirm(first.signature.confirm_map, ctx, "PKG004")
        conf.findings = [f for f in conf.findings if f.message.startswith("vllm ")]
        fix = conf.fix or (
            f"install the vLLM release built for {torch_desc} (each vLLM wheel "
            "requires one torch release: pip install vllm==X pulls it), or the "
            "torch that the installed vLLM requires (pip show vllm)"
        )
        return [finding("PKG004" if conf.findings else "TRI005", ms, log, what, fix, conf)]
    abi_flag = "FALSE" if "__cxx11" in symbol else "TRUE" if re.search(r"[RKP]Ss", symbol) else None
    if dist == "flash-attn":
        fix = (
            f"install the flash-attn wheel built for {torch_desc}, its CUDA and the C++ ABI of "
            f"that torch{read_them} (wheel names say it: …cu12torch2.Xcxx11abi{abi_flag or 'TRUE/FALSE'}…"
            + (
                "; python -c 'import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)' tells which)"
                if torch_v
                else ")"
            )
            + ", or build it against that torch: FLASH_ATTENTION_FORCE_BUILD=TRUE pip install "
            "--force-reinstall --no-build-isolation --no-cache-dir flash-attn (without "
            "FLASH_ATTENTION_FORCE_BUILD=TRUE its setup.py fetches the prebuilt wheel it names for "
            "this torch again instead of compiling)"
        )
    elif dist in _DOMAIN:
        fix = _domain_fix(dist, torch_v, torch_desc, read_them)
    else:
        name = dist or library
        fix = (
            f"reinstall {name} built for {torch_desc}{read_them} (pip install --force-reinstall "
            f"--no-cache-dir --no-build-isolation {dist or '<package>'}), or install the "
            f"torch release that {name} was built for"
        )
    return [finding("TRI005", ms, log, what, fix)]


def _domain_fix(dist: str, torch_v: str | None, torch_desc: str, read_them: str) -> str:
    """Reinstall a PyTorch domain library at the release built for the run's torch (the data's
    pair where the log shows torch), or uninstall it where the run does not use it."""
    from envdoctor.triage.compiled import companion

    pair = companion(dist, torch_v) if torch_v else None
    install = (
        f"pip install --force-reinstall --no-deps '{dist}=={pair}.*' ({dist} {pair} is the release "
        f"built for torch {'.'.join(str(torch_v).split('.')[:2])})"
        if pair
        else f"pip install --force-reinstall --no-deps {dist}==<the release built for that torch>"
        f"{read_them} (pytorch.org/get-started/previous-versions names the {dist} release of each torch)"
    )
    return (
        f"install the {dist} release built for {torch_desc}: {install}; or, where the run does not use "
        f"{dist} (transformers imports it whenever it is installed), pip uninstall -y {dist}"
    )


def _symbol_cut(ms: list[Match], log: Log, dist: str | None, library: str) -> list[Draft]:
    """TRI005 as a warning: an extension's loader message cut after "undefined symbol:"."""
    if dist is None:
        return reject(ms)  # neither the symbol nor a package whose kernels link torch
    what = (
        f"{dist} does not load: {library} needs a symbol the process does not have (the log cuts the "
        "message before its name); for an extension that links torch, most often one built against "
        "another torch release or C++ ABI"
    )
    fix = (
        f"reinstall {dist} built for the run's torch (pip install --force-reinstall --no-cache-dir "
        f"--no-build-isolation {dist}), or install the torch release {dist} was built for; the whole "
        "message names the symbol (c10 / at / torch: torch's)"
    )
    return [at_severity(finding("TRI005", ms, log, what, fix), Severity.WARNING)]


# -- functions called with arguments they do not take ---------------------------------------------

_REWARD_CALL = ("reward_func(", "_calculate_rewards", "output_reward_func", "reward_kwargs")


def _function(body: str) -> str:
    """The function a call-signature message names: ``reward_len`` of ``reward_len() got …``,
    the class of ``EngineArgs.__init__() got …``."""
    head = body[: body.find("() ")][-200:]
    names = re.findall(r"[\w.<>]{1,200}", head)
    if not names:
        return "the function"
    name = names[-1].removesuffix(".__init__")
    return name.rsplit(".", 1)[-1]


def _reward_called(first: Match, log: Log) -> bool:
    """Whether the traceback shows the call that raised as TRL's call of the reward functions: its
    innermost frame is that call (``trainercols.reward_call``), not the user's code calling a
    function of its own whose name says reward."""
    from envdoctor.triage import trainercols

    tb = failure(first.context, first.text, first.line_no)
    if tb is None or not tb.frames:
        return False
    trl = log.versions.get("trl")
    return bool(trainercols.reward_call(tb.frames[-1], trl.version if trl is not None else None))


def call_signature(ms: list[Match], log: Log) -> list[Draft]:
    """A reward function called with TRL's keywords it does not take (DAT008) or without one it
    requires (DAT007, the data rules' own ids): an error where the frames show TRL's reward call,
    a warning where only the function's name says reward. Any other call: the drift answer."""
    from envdoctor.checks.data import reward_argument_fix, reward_kwargs_fix

    first = ms[0]
    g, func = first.groups, _function(first.text)
    owners = [o for f in frames(first) if (o := package_of(f)[0])]
    proved = _reward_called(first, log)
    reward = proved or context_has(first, *_REWARD_CALL) or "reward" in func.lower()
    trainer = "GRPOTrainer" if "trl" in owners else "the trainer"
    level = Severity.ERROR if proved else Severity.WARNING
    if reward and "kwarg" in g:
        what = (
            f"reward function {func}() does not accept the keyword argument '{g['kwarg']}': "
            f"{trainer} passes the completions and the dataset's other columns to reward "
            "functions by keyword"
        )
        return [at_severity(finding("DAT008", ms, log, what, reward_kwargs_fix(func)), level)]
    if reward and "missing" in g:
        wanted = re.findall(r"'(\w{1,200})'", g["missing"])
        names = ", ".join(wanted) or g["missing"]
        what = (
            f"reward function {func}() requires {names}, which {trainer} did not pass: the "
            "dataset has no column of that name (TRL passes each column but prompt to the reward "
            "functions by keyword)"
        )
        fix = reward_argument_fix(wanted[0] if wanted else names)
        fix += " (and keep remove_unused_columns: false, GRPOConfig's default, so that the column reaches it)"
        return [at_severity(finding("DAT007", ms, log, what, fix), level)]
    return reject(ms)  # not a reward function: left to the drift answer (structural.api_drift)


# -- ranks that share a GPU -----------------------------------------------------------------------


def _launcher_fix(ctx: Context | None) -> str:
    fix = knobs.RANK_DEVICE
    if ctx is not None and layout_given(ctx) and ctx.facts.gpus:
        lay = ctx.layout
        if lay.num_processes > len(lay.visible):
            fix = (
                f"{lay.launcher} starts {lay.num_processes} processes on {len(lay.visible)} "
                f"visible GPU(s) ({lay.visible_source}): run at most {len(lay.visible)} "
                f"processes, or make more GPUs visible; " + fix
            )
    return fix


_CLIENT = ("vllm_client", "init_communicator", "pynccl", "PyNcclCommunicator")
_SERVER = ("vllm-serve", "vllm_serve")


def _server_mode(first: Match, log: Log) -> bool:
    """The duplicate is between the trainer and a ``trl vllm-serve`` server: TRL's weight-sync
    client in the traceback, the trainer waiting for or reaching the server, or the launch line."""
    if context_has(first, *_CLIENT) or log.hint("trl-weight-sync-client"):
        return True
    if any(s in log.by_sig for s in ("vllm-server-up", "vllm-server-not-up", "vllm-server-refused")):
        return True
    ctx = log.ctx
    return ctx is not None and layout_given(ctx) and ctx.layout.generation_mode == "server"


def _server_engines(ms: Sequence[Match], log: Log) -> bool:
    """The ranks that collide are the server's own engines (data-parallel ``EngineCore_N``)."""
    return log.hint("vllm-dp-engine") is not None or any(
        re.match(r"\(EngineCore_(?:DP)?[1-9]", line.strip()) for m in ms for line in (m.text, *m.context)
    )


def duplicate_gpu(ms: list[Match], log: Log) -> list[Draft]:
    first, ctx = ms[0], log.ctx
    ranks = sorted({int(m.groups[k]) for m in ms for k in ("rank_a", "rank_b")})
    buses = sorted({m.groups["bus_id"] for m in ms})
    what = (
        f"ranks {', '.join(map(str, ranks[:16]))} of one NCCL group run on the same GPU "
        f"(bus id {', '.join(buses[:4])}); NCCL refuses that"
    )
    if _server_engines(ms, log) and not (context_has(first, *_CLIENT) or log.hint("trl-weight-sync-client")):
        what += ": the vLLM server's data-parallel engines landed on one GPU"
        fix = (
            "give `trl vllm-serve` as many visible GPUs as tensor_parallel_size × "
            "data_parallel_size (CUDA_VISIBLE_DEVICES), each engine its own"
        )
    elif _server_mode(first, log):
        one = ctx is not None and len(ctx.facts.gpus) == 1
        what += (
            ": the trainer's weight-sync client (NCCL) and the `trl vllm-serve` server are on "
            "one GPU — in server mode they are two ranks of one NCCL group and need two GPUs"
        )
        colocate = (
            "set vllm_mode: colocate (TRL ≥ 0.18): vLLM then runs inside the trainer and "
            "shares its GPU (lower vllm_gpu_memory_utilization to leave room for training)"
        )
        own = (
            f"give the server a GPU that no trainer rank uses: `{_free_for_server(ctx)} trl "
            "vllm-serve …`, and the trainer CUDA_VISIBLE_DEVICES without it"
        )
        fix = (
            colocate + " — one GPU cannot hold both sides of server mode" if one else own + "; or " + colocate
        )
        fix += (
            "; torch.cuda.set_device(LOCAL_RANK) does not help here: the server is a process "
            "of its own (huggingface/trl#3487)"
        )
    else:
        fix = _launcher_fix(ctx)
    return [finding("TRI006", ms, log, what, fix)]


# -- command lines the program refuses ------------------------------------------------------------

_PROGRAM = re.compile(r"^(?:usage: )?(?P<prog>[\w.-]{1,60})(?: [\w-]{1,60})?: error: ")


def usage_error(ms: list[Match], log: Log) -> list[Draft]:
    """argparse's or click's refusal of the command line; ``trl vllm-serve`` on a TRL older than
    0.16.0 is told by name."""
    first, ctx = ms[0], log.ctx
    g = first.groups
    trl = ctx.version("trl") if ctx is not None else None
    body = first.text
    prog = _PROGRAM.match(split_prefix(body)[0]) or _PROGRAM.match(body)
    name = prog.group("prog") if prog else "the program"
    if g.get("choice") == "vllm-serve" or g.get("command") == "vllm-serve":
        if trl is not None and not versions.below(trl, "0.16.0"):
            what = (
                f"`trl vllm-serve` was refused, but the log's TRL {trl} has it: another `trl` "
                "is first on the PATH"
            )
            fix = "run the trl of the environment that has TRL ≥ 0.16 (python -m trl vllm-serve …)"
        else:
            what = (
                f"the TRL{' ' + trl if trl else ''} that ran has no `vllm-serve` command: "
                "`trl vllm-serve` (server mode) exists from TRL 0.16.0"
            )
            fix = (
                "pip install 'trl[vllm]>=0.16' (with the vLLM that release supports); or keep "
                "this TRL and let the trainer start vLLM itself (use_vllm: true, TRL ≤ 0.15's "
                "vllm_device)"
            )
        return [finding("TRI010", ms, log, what, fix)]
    bad = g.get("choice") or g.get("command") or g.get("unrecognized") or g.get("required") or ""
    if "unrecognized" in g and launcher_local_rank(bad.split()):
        return as_entry(ms, log, LOCAL_RANK_ENTRY)  # the launcher's own argument, not the program's
    kind = (
        "does not know the choice"
        if "choice" in g
        else "has no command"
        if "command" in g
        else "does not take"
        if "unrecognized" in g
        else "requires"
    )
    what = f"{name}{' (TRL ' + trl + ')' if trl and 'trl' in name else ''} {kind} {cut(bad.strip(), 200)}"
    fix = (
        f"use the commands and flags `{name} --help` lists for the installed release, or install "
        "the release the command line was written for"
    )
    return [finding("TRI010", ms, log, what, fix)]


#: the argument a legacy launcher (DeepSpeed's, torch.distributed.launch) adds to every process's
#: command line: ``--local_rank=N`` or, from torch 2.0, ``--local-rank=N``
_LOCAL_RANK = re.compile(r"--local[-_]rank(?:=\d{1,6})?")


LOCAL_RANK_ENTRY = "launcher-passes-local-rank-argument"


def launcher_local_rank(arguments: list[str]) -> bool:
    """Whether the refused arguments are only a launcher's local rank (and its value)."""
    words = [a.strip("'\",[]") for a in arguments if a.strip("'\",[]")]
    return (
        bool(words)
        and _LOCAL_RANK.fullmatch(words[0]) is not None
        and all(_LOCAL_RANK.fullmatch(w) or w.isdigit() for w in words)
    )


# -- nn.DataParallel replicas ----------------------------------------------------------------------


def dataparallel_replica(ms: list[Match], log: Log) -> list[Draft]:
    ms = sorted(ms, key=lambda m: m.groups.get("device") == "0")  # a replica off GPU 0 tells more
    first, ctx = ms[0], log.ctx
    g = first.groups
    what = (
        f"nn.DataParallel's replica {g['replica']} on GPU {g['device']} raised "
        f"{g['exception']}: it met a tensor that nn.DataParallel did not copy to that GPU"
    )
    if (
        ctx is not None
        and layout_given(ctx)
        and dataparallel(ctx.layout)
        and (ctx.config.get("use_vllm") or ctx.version("trl"))
    ):
        conf = confirm({"rules": ("LAY003",)}, ctx, "LAY003")
        if conf.findings:
            return [finding("LAY003", ms, log, what, conf.fix, conf)]
    n = len(ctx.layout.visible) if ctx is not None and layout_given(ctx) and ctx.facts.gpus else "N"
    fix = (
        f"one process per GPU: torchrun --nproc_per_node {n} with DistributedDataParallel "
        "(or accelerate launch), or one visible GPU (CUDA_VISIBLE_DEVICES=0); if you keep "
        "nn.DataParallel, register submodules with nn.ModuleList / nn.ModuleDict and tensors "
        "with register_buffer instead of plain lists, dicts or a fixed device"
    )
    return [finding("TRI008", ms, log, what, fix)]


# -- HAMi's vGPU memory cap ------------------------------------------------------------------------

_HAMI = re.compile(
    r"HAMI-core ERROR[^\]]{0,200}\]\]?:? Device (?P<device>\d{1,3}) OOM "
    r"(?P<used>\d{1,20}) / (?P<limit>\d{1,20})"
)


def hami_cap(m: Match) -> tuple[int, float, float] | None:
    """``(device, bytes wanted in total, cap in bytes)`` from HAMi's line before ``m``."""
    for line in reversed(m.context):
        h = _HAMI.search(line)
        if h:
            return int(h.group("device")), float(h.group("used")), float(h.group("limit"))
    return None


#: a program of ``runkind.program`` in a finding's words
_PROGRAM_SAID = {"vllm-server": "vLLM's own OpenAI server (its command line)"}


def cuda_error_under_cap(ms: list[Match], log: Log) -> list[Draft]:
    first = ms[0]
    if first.groups.get("cuda_error", "").startswith("out of memory"):
        return []  # the out-of-memory signature tells this one
    cap = hami_cap(first)
    if cap is None:
        return reject(ms)
    device, used, limit = cap
    what = (
        f"HAMi's vGPU limiter refused an allocation on device {device}: the job needed "
        f"{size_text(used, digits=2)} in all, over its cap of {size_text(limit, digits=2)}; the cap, "
        "not the physical GPU, is this job's memory"
    )
    batch = knobs.setting(log.ctx, "per_device_train_batch_size")
    fix = knobs.vgpu_cap_fix(
        used, f"{size_text(limit)}; lower {batch}, max_completion_length or the model size"
    )
    return [finding("TRI001", ms, log, what, fix, cause="vgpu-cap")]


def sampler_warmup(ms: list[Match], log: Log) -> list[Draft]:
    """vLLM ran out of memory warming up its sampler with max_num_seqs dummy requests."""
    g = ms[0].groups
    mode = log.ctx.layout.generation_mode if log.ctx is not None and layout_given(log.ctx) else None
    util = (
        "--gpu_memory_utilization of trl vllm-serve"
        if mode == "server"
        else knobs.setting(log.ctx, "vllm_gpu_memory_utilization")
        if mode == "colocate"
        else "vLLM's gpu_memory_utilization"
    )
    what = (
        f"vLLM ran out of memory warming up its sampler with {g.get('requests', '?')} dummy "
        "requests (max_num_seqs): its KV cache left too little for the sampler"
    )
    fix = f"lower vLLM's max_num_seqs (below {g.get('requests', 'the current value')}) or {util}"
    return [finding("MEM001", ms, log, what, fix)]


# -- the catalogue of known failures (rules/knowledge/known_failures/) ----------------------------


def versions_verdict(packages: dict[str, str], log: Log) -> tuple[bool | None, str]:
    """Whether the log's versions fall in an entry's ``when.packages`` ranges: True (all that the
    log shows do), False (one does not), None (the log shows none of them)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    shown: list[str] = []
    outside: list[str] = []
    across: list[str] = []
    for dist, spec in packages.items():
        found = log.versions.get(dist)
        if found is None:
            continue
        # the first frame that placed it, without its source line
        at = f" at {found.frames[0].split(' (')[0]}" if found.inferred and found.frames else ""
        try:
            inside = SpecifierSet(spec).contains(found.version, prereleases=True)
            if not found.exact:  # a range the frames fit: inside only when both its ends are
                low = SpecifierSet(spec).contains(found.low or found.version, prereleases=True)
                if not (inside and low and not found.newest):
                    # a range partly outside or open: no verdict from it (wholly outside: a
                    # checkout between releases fits the later one's lines, no ruling out either)
                    across.append(f"{dist} {found.range_text()}{at} ({spec})")
                    continue
        except (InvalidSpecifier, ValueError):
            continue
        inferred = f" inferred from the traceback's frames{at}" if found.inferred else ""
        (shown if inside else outside).append(f"{dist} {found.range_text()}{inferred} ({spec})")
    if outside:
        return False, "the log's versions do not match: " + ", ".join(outside)
    if shown:
        return True, "the log's versions match: " + ", ".join(shown)
    if across:
        return None, (
            "the traceback's frames place "
            + ", ".join(across)
            + ", not wholly inside the entry's range: `pip show` tells which release the run had"
        )
    return None, "the log shows no versions of " + ", ".join(f"{d} {s}" for d, s in packages.items())


def _unshown_bounds(packages: dict[str, str], log: Log) -> int:
    """How many of an entry's packages are bounded from above (a release range: ``<``, ``==``,
    ``~=``) while the log does not show their version: the guesses a diagnosis would rest on."""
    return sum(
        1
        for dist, spec in packages.items()
        if (dist not in log.versions or not log.versions[dist].exact) and re.search(r"<|==|~=", spec)
    )


#: kinds whose symptom is the failure itself: once the log shows it, it happened (a "depends" of
#: the entry was about whether it would happen, which the log has answered)
SEEN_KINDS = ("crash", "refusal")
#: a release in a fix (``trl==0.19.1``, ``>=4.56``, ``vllm<0.9``); a single ``=`` is an assignment
#: (``export NCCL_SHM_DISABLE=1``, ``MASTER_PORT=29500``), not a version
_VERSION_FIX = re.compile(r"(?:[<>]=?|[=~!]=)\s*\d")


def versionless(entry: object) -> bool:
    """Whether an entry's cause holds whatever the releases, once its symptom is the log's failure:
    a crash (or a certain refusal) whose fix changes no release (no ``fixed_in``, no version in the fix: a
    config key, the user's code or data, a launch) and whose symptom is no generic message of
    Python's (``'NoneType' object …``). Such an entry is an error on a log that shows no versions;
    one that hinges on releases is a warning there."""
    if getattr(entry, "kind", "") not in SEEN_KINDS:
        return False
    if getattr(entry, "symptom_decides", False):
        return True  # its symptom arises from this cause alone: the log's failure is the entry's
    if getattr(entry, "fixed_in", None):
        return False
    if getattr(entry, "certainty", "") != "certain":
        return False  # several causes (its note says which the log cannot tell)
    if _VERSION_FIX.search(str(getattr(entry, "fix", ""))):
        return False
    return not any("NoneType" in s.text for s in getattr(entry, "symptoms", ()))


def frames_hold(tb: Traceback, frames: tuple[tuple[str, str, str], ...]) -> bool | None:
    """Whether ``tb`` shows one of an entry's frames: True, False (it shows frames, none of them),
    None (it shows no frame of that package at all: the traceback is cut or absent)."""
    if not frames:
        return True
    shown = [f for t in tb.all() for f in t.frames]
    packages = {p for p, _, _ in frames}
    if not any(f.package in packages for f in shown):
        return None if not shown else False
    return _held_frame(shown, frames) is not None


def _held_frame(shown: list[Frame], frames: tuple[tuple[str, str, str], ...]) -> Frame | None:
    """The first of ``shown`` that is one of an entry's frames (package, file, function), or None."""
    return next(
        (
            f
            for p, file, func in frames
            for f in shown
            if f.package == p
            and (not file or f.module_path.endswith(file))
            and (not func or f.function.endswith(func))
        ),
        None,
    )


def _frames_contradict(entry: object, m: Match) -> bool:
    """An entry that says where it is raised (``raised.frames``), on a line whose traceback shows
    frames of which none is the entry's: another failure with the same words (a KeyError of the
    user's own dict, not vLLM's load_weights)."""
    raised = getattr(entry, "raised", None)
    if not raised or not raised[2] or not m.context:
        return False
    from envdoctor.triage.traceback import failure

    tb = failure(m.context, m.text, m.line_no)
    return tb is not None and any(t.frames for t in tb.all()) and frames_hold(tb, raised[2]) is not True


def _ruled_out_by_context(entry: object, m: Match, log: Log | None = None) -> str:
    """The line that rules the entry out (``ruled_out_by``), where ``_settled_by_context`` looks,
    when no line settles it: the log shows the evidence that would tell the entry's cause, and it
    tells another; '' when none is shown."""
    if not getattr(entry, "ruled_out_by", ()) or _settled_by_context(entry, m, log):
        return ""
    return _settled_by_context(entry, m, log, key="ruled_out_by")


def _settled_by_context(entry: object, m: Match, log: Log | None = None, key: str = "certain_with") -> str:
    """The line that settles an entry's cause among those its note names (``certain_with``: a
    level-2 sleep before garbage completions): before the symptom, on its line, or on the lines
    that go on with its message where the log's head holds them (torch's CheckpointError prints
    the recomputed metadata, ``shape=[0]``, after its first line); '' when none is shown.
    ``key``: the entry's lines to look for (``ruled_out_by``: the ones that contradict it)."""
    if not getattr(entry, key, ()):
        return ""
    more: list[str] = []
    if log is not None and log.head and m.line_no > 0:
        from envdoctor.triage.rejoin import _following

        head = log.head.decode("utf-8", errors="replace").split("\n", m.line_no + 8)
        more = _following(head, m.line_no)
    for line in (*m.context, m.text, *more):
        for s in getattr(entry, key, ()):
            if s.found_in(line[:2000]):
                return line.strip()[:200]
    return ""


def _settled_by_frame(entry: object, m: Match) -> str:
    """The entry's own frame (``raised.frames``) in the symptom's traceback, for an entry whose
    cause hinges on no release (no ``fixed_in``, no release in its fix: an open bug of one place,
    a platform's code): the frame is the evidence that the run met that code, and a symptom whose
    words another package's code also raises (vLLM's own ``assert isinstance(device,
    torch.device)`` beside vllm-ascend's) is told apart by it. '' when the traceback does not show
    it (``_frames_contradict`` drops a traceback that shows other frames only)."""
    raised = getattr(entry, "raised", None)
    if not raised or not raised[2] or not m.context or getattr(entry, "kind", "") not in SEEN_KINDS:
        return ""
    if _fix_is_a_release(entry):
        return ""  # the frame shows the code ran, not which release of it: versions decide
    from envdoctor.triage.traceback import failure

    tb = failure(m.context, m.text, m.line_no)
    f = _held_frame([f for t in tb.all() for f in t.frames], raised[2]) if tb is not None else None
    if f is None:
        return ""
    at = f"{f.module_path}:{f.line}" + (f" in {f.function}" if f.function else "")
    return f"the traceback's frame in {f.package} ({at})"


#: a fix that asks for another release in words ("upgrade vLLM to a release with #39935",
#: "upgrade TRL past 1.9"), where it names no version specifier
_UPGRADE_FIX = re.compile(r"(?i)\b(?:upgrade|downgrade)\b")


def _fix_is_a_release(entry: object) -> bool:
    """Whether an entry's failure is fixed by another release: its ``fixed_in``, a version in its
    fix, an upgrade its fix asks for in words, or a ``when`` range bounded from above (the release
    that ended it)."""
    fix = str(getattr(entry, "fix", ""))
    return bool(
        getattr(entry, "fixed_in", None)
        or _VERSION_FIX.search(fix)
        or _UPGRADE_FIX.search(fix)
        or any(re.search(r"<|==|~=", str(v)) for v in dict(getattr(entry, "packages", {})).values())
    )


def as_entry(ms: list[Match], log: Log, entry_id: str) -> list[Draft]:
    """The catalogue entry ``entry_id``'s diagnosis of lines another signature matched first."""
    from dataclasses import replace

    from envdoctor.triage import catalogue

    sigs = [s for s in catalogue.catalogue()[0] if s.id == catalogue.PREFIX + entry_id]
    drafts = known_failure([replace(m, signature=sigs[0]) for m in ms], log) if sigs else []
    for d in drafts:  # the own signature's handler chose it: kept on its line (diagnose._one_per_line)
        d.finding.evidence["dispatched_by"] = ms[0].signature.id
    return drafts


def known_failure(ms: list[Match], log: Log) -> list[Draft]:
    """A line holding a catalogue entry's symptom: the entry's cause and fix, confirmed when the
    log's versions fall in its ranges; no diagnosis when they fall outside."""
    from envdoctor.findings import Finding, Severity
    from envdoctor.triage import catalogue

    first = ms[0]
    entry = catalogue.catalogue()[2].get(first.signature.id)
    if entry is None or getattr(entry, "platform", None) or getattr(entry, "env", None):
        return []  # a platform or an environment variable, which a log does not show
    cfg = log.ctx.config if log.ctx is not None and layout_given(log.ctx) else {}
    if any(
        k in cfg and "*" not in v and cfg[k] not in v for k, v in dict(getattr(entry, "config", {})).items()
    ):
        return []  # the run's config (--config) contradicts the entry
    from envdoctor.triage.runkind import generation_only

    if generation_only(entry, log):
        return []  # a failure of GRPO's generation path, on a run that trains offline (DPO, SFT)
    if _frames_contradict(entry, first):
        return []  # the traceback shows where it was raised, and it is not the entry's frame
    if _ruled_out_by_context(entry, first, log):
        return []  # the log shows the evidence that tells the entry's cause, and it tells another
    from envdoctor.triage.missing import went_on

    if entry.kind == "crash" and went_on(log, first.line_no):
        return []  # training steps after the symptom: the run did not crash of it (a warning's words)
    verdict, detail = versions_verdict(entry.packages, log)
    if verdict is False:
        return []  # the symptom, but not in the releases the entry is about
    from envdoctor.triage.boundary import shows_pair

    pair = shows_pair(first, list(entry.packages)) if verdict is None else ""
    if pair:  # the failure is the entry's drift between its two packages: they do not fit
        detail += f"; the failure itself is API drift between {pair}, the pairing this entry is about"
    from envdoctor.triage import usage

    shown, shown_ev = usage.describe(entry, first, log.head)  # the values it read, the user's frame
    from envdoctor.triage.runkind import program

    fixes = dict(getattr(entry, "program_fixes", ()))
    ran = program(log) if fixes else None
    elsewhere = fixes.get(ran or "")
    if elsewhere:  # the failure met in another program than the entry's trainer: fixed there
        detail += f"; the log runs {_PROGRAM_SAID.get(ran or '', ran)}, not the trainer this entry is about"
    from envdoctor.triage.olderfix import older

    older_fix = getattr(entry, "older_fix", None) or {}
    why_older = older(older_fix, first, log)
    if why_older and not elsewhere:  # the run's release lacks what the entry's fix needs
        detail += f"; {why_older}"
    draft = finding(
        catalogue.RULE,
        ms,
        log,
        f"{entry.title} — {entry.cause} ({entry.id}){shown}; {detail}",
        (
            elsewhere
            or (older_fix["fix"] if why_older else usage.read_fix(entry, shown_ev.get("values") or {}))
        )
        + (
            f" (fixed in {', '.join(f'{d} {v}' for d, v in entry.fixed_in.items())})"
            if entry.fixed_in
            else ""
        ),
        known_failure=entry.id,
        sources=list(entry.sources),
        versions_match=verdict,
        unshown_bounds=_unshown_bounds(entry.packages, log),
        **shown_ev,
    )
    # a usage entry's raising frame shows only that the library's code ran, not whose input it
    # got; where a library's own frame (not of the raising stack) lies deeper than the user's, that
    # library may have built what failed (a trainer's collator: a bug of its release): a warning
    # naming both readings, unless the message alone decides (``symptom_decides``)
    uses = getattr(entry, "usage", False)
    passed_by = shown_ev.get("passed_by", "") if uses and not getattr(entry, "symptom_decides", False) else ""
    settled = verdict is not False and (
        _settled_by_context(entry, first, log) or (not uses and _settled_by_frame(entry, first))
    )
    # a range with no upper bound (vllm >=0.2.0) holds every release since: the log's release
    # falling in it is no evidence that the release is the cause, unless the entry is certain
    bounded = any(re.search(r"<|==|~=", str(spec)) for spec in entry.packages.values())
    severity = not passed_by and (
        verdict is True
        and (bounded or entry.certainty == "certain" or versionless(entry))
        and (entry.severity == "error" or entry.kind in SEEN_KINDS)
        or (verdict is None and (versionless(entry) or bool(pair)))
        or settled
    )
    if settled:
        draft.finding.evidence["settled_by"] = settled
    f = draft.finding
    message = f.message + (
        f"; the traceback passes through {passed_by}'s own code"
        + (" after yours" if shown_ev.get("user_frame") else "")
        + f": either your data or setup,"
        f" or {passed_by} built or passed it wrongly (a bug of its release: upgrade {passed_by} or"
        " report it there)"
        if passed_by
        else ""
    )
    message += f"; the log shows what settles it: “{settled}”" if settled else ""
    draft.finding = Finding(
        f.rule, Severity.ERROR if severity else Severity.WARNING, message, f.fix, f.evidence
    )
    from envdoctor.triage import modelsupport

    if entry.id in modelsupport.ENTRIES:  # a model refusal: named by the releases envdoctor read
        return modelsupport.refine(entry, first, log, [draft])
    return [draft]
