"""Parse launch command lines the way the shell, accelerate, torchrun and TRL would."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from envdoctor.errors import InputError
from envdoctor.plan.interface import Launch

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = {";", "&&", "&", "||", "|"}
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")

# Flags of each launcher that take no value; every other flag takes one.
_BOOLEAN = {
    "accelerate": {
        "multi_gpu", "cpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "use_xpu", "tpu",
        "no_python", "module", "m", "quiet", "q", "debug", "same_network",
        "enable_cpu_affinity", "dynamo_use_fullgraph", "dynamo_use_dynamic", "h", "help",
    },
    "torchrun": {"standalone", "module", "m", "no_python", "run_path", "h", "help"},
    "deepspeed": {"no_local_rank", "no_python", "module", "autotuning", "force_multi",
                  "no_ssh_check", "save_pid", "enable_each_rank_log", "h", "help"},
}
#: accelerate flags that ``trl grpo`` passes on to accelerate.
_TRL_ACCELERATE = {"num_processes", "num_machines", "machine_rank", "gpu_ids", "config_file",
                   "accelerate_config", "main_process_port", "multi_gpu"}


def coerce(value: str) -> Any:
    """A command-line value as HfArgumentParser would likely type it."""
    low = value.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    if _INT.match(value):  # a longer one stays text: the config reader refuses it, naming it
        return int(value) if len(value) <= 40 else value
    if _FLOAT.match(value):
        return float(value)
    return value


def parse_script_args(args: list[str]) -> dict[str, Any]:
    """``--key value`` / ``--key=value`` / ``--flag`` / ``--no_flag`` into a dict."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("--") or tok == "--":
            continue
        key, eq, val = tok[2:].partition("=")
        key = key.replace("-", "_")
        if eq:
            out[key] = coerce(val)
            continue
        values = []
        while i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        if not values:
            if key.startswith("no_"):
                out[key[3:]] = False
            else:
                out[key] = True
        elif len(values) == 1:
            out[key] = coerce(values[0])
        else:
            out[key] = [coerce(v) for v in values]
    return out


def _split_options(launcher: str, tokens: list[str]) -> tuple[dict[str, Any], list[str], int]:
    """Consume launcher flags; return (options, unknown-looking flags, index of the script)."""
    boolean = _BOOLEAN.get(launcher, set())
    opts: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "-":
            break
        if tok == "--":
            i += 1
            break
        name, eq, val = tok.lstrip("-").partition("=")
        name = name.replace("-", "_")
        i += 1
        if name in ("m", "module") and launcher != "accelerate":
            opts["module"] = True
            continue
        if name in boolean:
            opts[name] = True if not eq else coerce(val)
            continue
        if eq:
            opts[name] = coerce(val)
        elif i < len(tokens) and not tokens[i].endswith(".py"):
            opts[name] = coerce(tokens[i])
            i += 1
        else:
            opts[name] = True
    return opts, [], i


def _python_launch(raw: str, env: dict[str, str], argv: list[str]) -> Launch:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
        i += 1  # interpreter flags like -u, -X dev
    if i < len(argv) and argv[i] == "-m" and i + 1 < len(argv):
        module = argv[i + 1]
        rest = argv[i + 2:]
        if module in ("torch.distributed.run", "torch.distributed.launch"):
            return _launcher_launch(raw, env, "torchrun", argv[: i + 2], rest)
        if module == "accelerate.commands.launch":
            return _launcher_launch(raw, env, "accelerate", argv[: i + 2], rest)
        return Launch(raw=raw, launcher="python", env=env, program=argv[: i + 2],
                      module=module, script_args=rest)
    script = argv[i] if i < len(argv) else None
    return Launch(raw=raw, launcher="python", env=env, program=argv[:i], script=script,
                  script_args=argv[i + 1:])


def _launcher_launch(raw: str, env: dict[str, str], launcher: str, head: list[str],
                     rest: list[str]) -> Launch:
    opts, _unknown, i = _split_options(launcher, rest)
    launch = Launch(raw=raw, launcher=launcher, env=env, options=opts, program=head + rest[:i])
    tail = rest[i:]
    if opts.get("module") or opts.get("m"):
        launch.module = tail[0] if tail else None
    else:
        launch.script = tail[0] if tail else None
    launch.script_args = tail[1:]
    return launch


def parse_launch(raw: str, env: dict[str, str] | None = None) -> Launch:
    """Parse one command (no separators). ``env`` holds variables exported before it."""
    try:
        tokens = shlex.split(raw.replace("\\\n", " "), comments=False, posix=True)
    except ValueError as exc:
        raise InputError("launch command", f"cannot parse {raw!r}: {exc}") from None
    return _parse_tokens(raw, tokens, dict(env or {}))


def _parse_tokens(raw: str, tokens: list[str], env: dict[str, str]) -> Launch:
    while tokens and (_ASSIGN.match(tokens[0]) or tokens[0] in ("env", "exec", "nohup")):
        tok = tokens.pop(0)
        if "=" in tok:
            key, _, value = tok.partition("=")
            env[key] = value
    if not tokens:
        return Launch(raw=raw, launcher="env", env=env)
    prog = os.path.basename(tokens[0])
    if re.fullmatch(r"python[0-9.]*", prog):
        return _python_launch(raw, env, tokens)
    if prog == "accelerate" and tokens[1:2] == ["launch"]:
        return _launcher_launch(raw, env, "accelerate", tokens[:2], tokens[2:])
    if prog in ("torchrun", "deepspeed"):
        return _launcher_launch(raw, env, prog, tokens[:1], tokens[1:])
    if prog == "trl" and len(tokens) > 1 and tokens[1] in ("vllm-serve", "vllm_serve"):
        return Launch(raw=raw, launcher="trl-vllm-serve", env=env, program=tokens[:2],
                      options=parse_script_args(tokens[2:]), script_args=tokens[2:])
    if prog == "vllm" and tokens[1:2] == ["serve"]:
        return Launch(raw=raw, launcher="vllm-serve", env=env, program=tokens[:2],
                      options=parse_script_args(tokens[3:]), script_args=tokens[2:])
    if prog == "trl" and len(tokens) > 1:
        args = tokens[2:]
        parsed = parse_script_args(args)
        opts = {k: v for k, v in parsed.items() if k in _TRL_ACCELERATE}
        return Launch(raw=raw, launcher=f"trl-{tokens[1]}", env=env, program=tokens[:2],
                      options=opts, script_args=args)
    if prog.endswith(".py"):
        return Launch(raw=raw, launcher="python", env=env, program=[], script=tokens[0],
                      script_args=tokens[1:])
    return Launch(raw=raw, launcher="unknown", env=env, program=tokens[:1],
                  script_args=tokens[1:])


def parse_launches(text: str | list[str]) -> list[Launch]:
    """Parse one or more commands joined by newlines, ``;``, ``&&`` or ``&``.

    ``export VAR=…`` and bare ``VAR=…`` statements apply to the commands after them.
    """
    if isinstance(text, list):
        text = " ".join(shlex.quote(t) if t not in _SEPARATORS else t for t in text)
    try:
        joined = text.replace("\\\n", " ").replace("\n", " ; ")
        lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as exc:
        raise InputError("launch command", f"cannot parse {text!r}: {exc}") from None
    launches: list[Launch] = []
    exported: dict[str, str] = {}
    segment: list[str] = []
    for tok in tokens + [";"]:
        if tok not in _SEPARATORS:
            segment.append(tok)
            continue
        if not segment:
            continue
        if segment[0] == "export":
            for tok2 in segment[1:]:
                if "=" in tok2:
                    k, _, v = tok2.partition("=")
                    exported[k] = v
        else:
            launch = _parse_tokens(shlex.join(segment), segment, dict(exported))
            if launch.launcher == "env":
                exported.update(launch.env)
            else:
                launches.append(launch)
        segment = []
    return launches
