"""Parse launch command lines the way the shell, accelerate, torchrun and TRL would.

Wrappers that start the real command are peeled off and recorded (``envdoctor.plan.wrappers``):
``srun``, ``mpirun``, ``bash -c '…'``, ``env``, ``nohup``, ``uv run``… A command that cannot be
resolved (``sudo python t.py``, ``bash train.sh``) is kept with ``unresolved`` set to why.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from envdoctor.errors import InputError
from envdoctor.plan import shell_words
from envdoctor.plan.cd import cd_target
from envdoctor.plan.interface import Launch
from envdoctor.plan.placeholders import is_doc_placeholder
from envdoctor.plan.shell_follow import Parser, follow, script_words
from envdoctor.plan.shell_words import join as shell_join
from envdoctor.plan.wrappers import Peeled, peel
from envdoctor.script_args import coerce, parse_script_args

_SEPARATORS = {";", "&&", "&", "||", "|"}
#: shell statements and tools that appear in job scripts between the launch lines
_NOT_LAUNCHES = {
    "wait",
    "cd",
    "source",
    ".",
    "set",
    "unset",
    "echo",
    "printf",
    "sleep",
    "module",
    "ulimit",
    "trap",
    "true",
    "false",
    ":",
    "mkdir",
    "shopt",
    "pushd",
    "popd",
    "umask",
    "exit",
    "nvidia-smi",
    "scontrol",
    "ml",
    # the setup steps a job's command runs before training (HF Jobs, a container's command)
    "pip",
    "pip3",
    "apt-get",
    "apt",
    "git",
    "wget",
}
_MAX_DEPTH = 4  # bash -c 'srun bash -c "…"' nests; deeper is not a launch line people write

# Flags of each launcher that take no value; every other flag takes one.
_BOOLEAN = {
    "accelerate": {
        "multi_gpu",
        "cpu",
        "use_deepspeed",
        "use_fsdp",
        "use_megatron_lm",
        "use_xpu",
        "tpu",
        "no_python",
        "module",
        "m",
        "quiet",
        "q",
        "debug",
        "same_network",
        "enable_cpu_affinity",
        "dynamo_use_fullgraph",
        "dynamo_use_dynamic",
        "h",
        "help",
    },
    "torchrun": {"standalone", "module", "m", "no_python", "run_path", "h", "help"},
    "deepspeed": {
        "no_local_rank",
        "no_python",
        "module",
        "autotuning",
        "force_multi",
        "no_ssh_check",
        "save_pid",
        "enable_each_rank_log",
        "h",
        "help",
    },
}
#: accelerate flags that ``trl grpo`` passes on to accelerate.
TRL_ACCELERATE = {
    "num_processes",
    "num_machines",
    "machine_rank",
    "gpu_ids",
    "config_file",
    "accelerate_config",
    "main_process_port",
    "multi_gpu",
}
#: ``python -m MODULE`` that is a launcher.
_LAUNCHER_MODULES = {
    "torch.distributed.run": ("torchrun", 0),
    "torch.distributed.launch": ("torchrun", 0),
    "accelerate.commands.launch": ("accelerate", 0),
    "accelerate.commands.accelerate_cli": ("accelerate", 1),  # … accelerate_cli launch
    "deepspeed.launcher.runner": ("deepspeed", 0),
}


#: launchers whose parser is argparse with long options only under ``--`` (measured by running
#: accelerate 1.15.0's launch_command_parser and torch's torch.distributed.run get_args_parser):
#: a one-dash word of several letters is no option of theirs
_DOUBLE_DASH = ("accelerate", "torchrun")


def single_dash(launcher: str, tokens: list[str]) -> tuple[str, ...]:
    """The launcher options among ``tokens`` (before the script) written with one dash and
    several letters (``-num_processes=7``, ``-config_file``)."""
    if launcher not in _DOUBLE_DASH:
        return ()
    _, end = _split_options(launcher, tokens)
    return tuple(
        t
        for t in tokens[:end]
        if t.startswith("-") and not t.startswith("--") and len(t.split("=", 1)[0]) > 2
    )


def _split_options(launcher: str, tokens: list[str]) -> tuple[dict[str, Any], int]:
    """Consume launcher flags; return (options, index of the script)."""
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
    return opts, i


#: modules that start vLLM's own OpenAI-compatible server, as `vllm serve` does
_VLLM_SERVER_MODULES = frozenset({"vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"})


#: TRL's server script (trl/scripts/vllm_serve.py, which `trl vllm-serve` runs): run by path or
#: as a module, TRL's or a repository's copy of it (verifiers/inference/vllm_serve.py), it is
#: TRL's vLLM server with TRL's options, not a training script
_TRL_SERVER_NAME = "vllm_serve"


def _trl_server(raw: str, env: dict[str, str], program: list[str], rest: list[str]) -> Launch:
    return Launch(
        raw=raw,
        launcher="trl-vllm-serve",
        env=env,
        program=program,
        options=parse_script_args(rest),
        script_args=rest,
    )


def _python_launch(raw: str, env: dict[str, str], argv: list[str]) -> Launch:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
        i += 1  # interpreter flags like -u, -X dev
    if i < len(argv) and argv[i] == "-m" and i + 1 < len(argv):
        module = argv[i + 1]
        rest = argv[i + 2 :]
        if module in _LAUNCHER_MODULES:
            launcher, sub = _LAUNCHER_MODULES[module]
            if sub and rest[:1] != ["launch"]:
                return _unknown(
                    raw, env, argv, f"`python -m {module} {' '.join(rest[:1])}` is not `accelerate launch`"
                )
            return _launcher_launch(raw, env, launcher, argv[: i + 2 + sub], rest[sub:])
        if module.rsplit(".", 1)[-1] == _TRL_SERVER_NAME:  # trl.scripts.vllm_serve, or a copy of it
            return _trl_server(raw, env, argv[: i + 2], rest)
        if module in _VLLM_SERVER_MODULES:  # vLLM's OpenAI server, which `vllm serve` runs
            return Launch(
                raw=raw,
                launcher="vllm-serve",
                env=env,
                program=argv[: i + 2],
                options=parse_script_args(rest),
                script_args=rest,
            )
        return Launch(
            raw=raw, launcher="python", env=env, program=argv[: i + 2], module=module, script_args=rest
        )
    script = argv[i] if i < len(argv) else None
    if script is None:
        return _unknown(raw, env, argv, f"`{shlex.join(argv)}` runs no script")
    if script.replace("\\", "/").rsplit("/", 1)[-1] == f"{_TRL_SERVER_NAME}.py":
        return _trl_server(raw, env, argv[: i + 1], argv[i + 1 :])
    return Launch(
        raw=raw, launcher="python", env=env, program=argv[:i], script=script, script_args=argv[i + 1 :]
    )


def _launcher_launch(
    raw: str, env: dict[str, str], launcher: str, head: list[str], rest: list[str]
) -> Launch:
    opts, i = _split_options(launcher, rest)
    launch = Launch(raw=raw, launcher=launcher, env=env, options=opts, program=head + rest[:i])
    launch.single_dash = single_dash(launcher, rest)
    tail = rest[i:]
    if opts.get("module") or opts.get("m"):
        launch.module = tail[0] if tail else None
    else:
        launch.script = tail[0] if tail else None
    launch.script_args = tail[1:]
    return launch


def _unknown(raw: str, env: dict[str, str], tokens: list[str], why: str) -> Launch:
    return Launch(
        raw=raw, launcher="unknown", env=env, program=tokens[:1], script_args=tokens[1:], unresolved=why
    )


def parse_launch(raw: str, env: dict[str, str] | None = None) -> Launch:
    """Parse one command (no separators). ``env`` holds variables exported before it; of a
    wrapper that runs several commands (``bash -c 'a; b'``) the first is returned."""
    try:
        tokens = shell_words.split(raw.replace("\\\n", " "))
    except ValueError as exc:
        raise InputError("launch command", f"cannot parse {raw!r}: {exc}") from None
    launches = _parse_tokens(raw, tokens, dict(env or {}), 0)
    return launches[0] if launches else Launch(raw=raw, launcher="env", env=dict(env or {}))


def _parse_tokens(
    raw: str, tokens: list[str], env: dict[str, str], depth: int, folder: str = ""
) -> list[Launch]:
    """The launches one command runs: itself, what its wrappers start, or what the shell script
    it runs runs (``plan/shell_follow``; ``folder``: where a ``cd`` before it went)."""
    peeled = peel(tokens, env)
    if peeled.inner is not None:  # bash -c '…': the commands inside
        if depth >= _MAX_DEPTH:
            return [_unknown(raw, env, tokens, "shell commands nested too deep")]
        inner = _parse_text(peeled.inner, dict(peeled.env), depth + 1, folder)
        for launch in inner:
            _apply_wrappers(launch, peeled)
        return inner
    rest = peeled.command
    script = script_words(rest, peeled.script)
    if script is not None:  # bash train.sh, ./launch/grpo.sh ARGS, source x.sh: the script's lines
        sourced = rest[:1] in (["source"], ["."])
        followed = follow(script, dict(peeled.env), depth, raw, _PARSER, folder, sourced)
        if followed is not None:
            if peeled.script:
                peeled.wrappers = peeled.wrappers[:-1]  # the shell that reads the script
            for launch in followed:
                _apply_wrappers(launch, peeled)
            return followed
        if not sourced:  # bash x.sh / ./x.sh where x.sh is not here
            where = os.path.normpath(os.path.join(folder, script[0]))
            peeled.unresolved = (
                f"`{shlex.join([*peeled.command[:1], *script[:1]] if peeled.script else script[:1])}` runs "
                f"a shell script that is not here ({where}): envdoctor reads a launch script only where it "
                "sees it (run it from the script's folder, or give the script's launch lines)"
            )
    if rest and rest[0] in _NOT_LAUNCHES and not peeled.unresolved:
        return []
    if rest and os.path.basename(rest[0]) == "sbatch" and not peeled.unresolved and depth < _MAX_DEPTH:
        batch = _sbatch(rest, peeled.env, depth)
        if batch is not None:
            return batch
    if peeled.unresolved:
        launch = _unknown(raw, peeled.env, rest or tokens, peeled.unresolved)
    elif not rest:
        return [Launch(raw=raw, launcher="env", env=peeled.env)]
    else:
        launch = _dispatch(raw, peeled.env, rest)
    _apply_wrappers(launch, peeled)
    return [launch]


#: sbatch options that take no value (sbatch(1)); every other option takes one
_SBATCH_FLAGS = frozenset(
    {
        "exclusive",
        "wait",
        "parsable",
        "hold",
        "H",
        "requeue",
        "no-requeue",
        "test-only",
        "verbose",
        "v",
        "quiet",
        "Q",
    }
)


def _sbatch(tokens: list[str], env: dict[str, str], depth: int) -> list[Launch] | None:
    """``sbatch [options] job.slurm``: the batch script's lines, run in the allocation its
    ``#SBATCH`` lines and the command line's options ask for (plan/launchers/slurm.py); None
    when the script is not here to read."""
    from envdoctor.errors import read_input_text
    from envdoctor.plan.launchers.sbatch import allocation_env, sbatch_options

    i = 1
    while i < len(tokens) and tokens[i].startswith("-"):
        tok = tokens[i]
        attached = "=" in tok or (not tok.startswith("--") and len(tok) > 2)
        i += 1 if attached or tok.lstrip("-") in _SBATCH_FLAGS else 2
    if i >= len(tokens) or not os.path.isfile(tokens[i]):
        return None
    text = read_input_text(tokens[i], f"sbatch {tokens[i]}", 1024 * 1024)
    given = sbatch_options("#SBATCH " + shlex.join(tokens[1:i]) + "\n") if i > 1 else {}
    alloc = {**sbatch_options(text), **given}
    return _parse_text(_without_comment_lines(text), {**env, **allocation_env(alloc)}, depth + 1)


def _without_comment_lines(text: str) -> str:
    """A script's text without its whole-line comments (``#!``, ``#SBATCH``, notes)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _accelerate(raw: str, env: dict[str, str], tokens: list[str]) -> Launch | None:
    if tokens[1:2] == ["launch"]:
        return _launcher_launch(raw, env, "accelerate", tokens[:2], tokens[2:])
    return None


def _torchrun(raw: str, env: dict[str, str], tokens: list[str]) -> Launch:
    return _launcher_launch(raw, env, "torchrun", tokens[:1], tokens[1:])


def _deepspeed(raw: str, env: dict[str, str], tokens: list[str]) -> Launch:
    return _launcher_launch(raw, env, "deepspeed", tokens[:1], tokens[1:])


def _trl(raw: str, env: dict[str, str], tokens: list[str]) -> Launch | None:
    """``trl vllm-serve`` (a server) or ``trl <command>`` (a trainer run through accelerate)."""
    if len(tokens) < 2:
        return None
    if tokens[1] in ("vllm-serve", "vllm_serve"):
        return Launch(
            raw=raw,
            launcher="trl-vllm-serve",
            env=env,
            program=tokens[:2],
            options=parse_script_args(tokens[2:]),
            script_args=tokens[2:],
        )
    args = tokens[2:]
    parsed = parse_script_args(args)
    opts = {k: v for k, v in parsed.items() if k in TRL_ACCELERATE}
    return Launch(
        raw=raw, launcher=f"trl-{tokens[1]}", env=env, program=tokens[:2], options=opts, script_args=args
    )


def _vllm(raw: str, env: dict[str, str], tokens: list[str]) -> Launch | None:
    if tokens[1:2] == ["serve"]:
        return Launch(
            raw=raw,
            launcher="vllm-serve",
            env=env,
            program=tokens[:2],
            options=parse_script_args(tokens[3:]),
            script_args=tokens[2:],
        )
    return None


#: program (``python3.11`` counts as python) -> its parser; None from a parser: the program
#: was called for something that starts no training (``accelerate config``, ``vllm bench``)
_PARSERS: dict[str, Callable[[str, dict[str, str], list[str]], Launch | None]] = {
    "python": _python_launch,
    "accelerate": _accelerate,
    "torchrun": _torchrun,
    "deepspeed": _deepspeed,
    "trl": _trl,
    "vllm": _vllm,
}


def _dispatch(raw: str, env: dict[str, str], tokens: list[str]) -> Launch:
    prog = os.path.basename(tokens[0])
    parser = _PARSERS.get("python" if re.fullmatch(r"python[0-9.]*", prog) else prog)
    launch = parser(raw, env, tokens) if parser is not None else None
    if launch is not None:
        return launch
    if prog.endswith(".py"):
        return Launch(
            raw=raw, launcher="python", env=env, program=[], script=tokens[0], script_args=tokens[1:]
        )
    if parser is not None:
        return _unknown(raw, env, tokens, f"`{shlex.join(tokens[:2])}` starts no training")
    return _unknown(raw, env, tokens, f"`{tokens[0]}` is not a launcher envdoctor knows")


def _apply_wrappers(launch: Launch, peeled: Peeled) -> None:
    """Record what the wrappers do; a wrapper that starts several copies of a launcher on a
    node, or copies of a plain script, leaves the launch unresolved."""
    launch.wrappers = peeled.wrappers + launch.wrappers
    if peeled.nodes is not None:
        launch.nodes = peeled.nodes
    if peeled.task_wrapper is None or launch.unresolved:
        return
    launch.placed_by = peeled.task_wrapper
    per_node = peeled.tasks_per_node
    wrapper = peeled.task_wrapper
    if launch.is_server or (peeled.tasks == 1 and per_node in (1, None)):
        return
    if launch.launcher == "python":
        launch.unresolved = (
            f"{wrapper} starts {peeled.tasks_text} of `{_what(launch)}`; "
            "whether they form one torch.distributed job is up to the script"
        )
    elif per_node is None:
        launch.unresolved = (
            f"{wrapper} starts {peeled.tasks_text} of {launch.launcher}; how "
            "many run on each node depends on the allocation or hostfile"
        )
    elif per_node > 1:
        launch.unresolved = (
            f"{wrapper} starts {per_node} copies of {launch.launcher} on each "
            "node (each would start its own processes)"
        )


def _what(launch: Launch) -> str:
    return launch.script or (f"-m {launch.module}" if launch.module else launch.raw)


_DUP = re.compile(r"(?<=\s)(\d*>&\d+|&>>?)(?=\s|$)")  # 2>&1, &> (before `&` splits commands)
_REDIRECT = re.compile(r"^\d*(>>?|<)(.*)$")


def _without_redirections(segment: list[str]) -> list[str]:
    """``> log``, ``2>err``, ``<in``: where output goes, not what runs."""
    out: list[str] = []
    skip = False
    for tok in segment:
        if skip:
            skip = False
            continue
        m = _REDIRECT.match(tok)
        if m and not is_doc_placeholder(tok):  # `<num_processes>` is a word the reader fills in
            skip = not m.group(2)
            continue
        out.append(tok)
    return out


def _cd(folder: str | None, args: list[str]) -> str | None:
    """Where ``cd ARGS`` goes from ``folder`` (``plan.cd.cd_target``); ``cd`` with no word or
    several cannot be followed (None)."""
    return cd_target(folder, args[0]) if len(args) == 1 else None


#: launcher options and script arguments whose value is a file the process opens where it runs
_PATH_OPTIONS = ("config_file", "accelerate_config", "deepspeed_config_file", "deepspeed")
_PATH_ARGS = ("--config", "--config_file", "--config-file", "--deepspeed")


def _moved(launch: Launch, folder: str) -> Launch:
    """``launch`` after ``cd FOLDER``: the relative files it names (its script, the accelerate and
    DeepSpeed configs, the script's ``--config``) as paths from where the commands started, which
    is where envdoctor reads them (``cd scripts && accelerate launch --config_file ../c.yaml``)."""

    def at(path: str) -> str:
        return (
            path
            if os.path.isabs(path) or is_doc_placeholder(path)
            else os.path.normpath(os.path.join(folder, path))
        )

    options = {
        k: at(v) if k in _PATH_OPTIONS and isinstance(v, str) and v.strip() else v
        for k, v in launch.options.items()
    }
    args = list(launch.script_args)
    for i, tok in enumerate(args):
        key, eq, value = tok.partition("=")
        if key in _PATH_ARGS and eq and value:
            args[i] = f"{key}={at(value)}"
        elif tok in _PATH_ARGS and i + 1 < len(args) and not args[i + 1].startswith("-"):
            args[i + 1] = at(args[i + 1])
    script = at(launch.script) if launch.script else launch.script
    program = [script if w == launch.script and script else w for w in launch.program]
    flags = {f"--{k}" for k in _PATH_OPTIONS} | {f"--{k.replace('_', '-')}" for k in _PATH_OPTIONS}
    for i, word in enumerate(program):
        key, eq, value = word.partition("=")
        if key in flags and eq and value:
            program[i] = f"{key}={at(value)}"
        elif word in flags and i + 1 < len(program) and not program[i + 1].startswith("-"):
            program[i + 1] = at(program[i + 1])
    # a ``-m`` module is found from the folder: the line as written keeps its ``cd`` (read again,
    # by ``envdoctor fix`` trying the line, it runs from there too)
    raw = f"cd {shlex.quote(folder)} && {launch.raw}" if launch.module and not launch.script else launch.raw
    return dataclasses.replace(
        launch, options=options, script_args=args, script=script, program=program, folder=folder, raw=raw
    )


def _parse_text(text: str, exported: dict[str, str], depth: int, folder: str = "") -> list[Launch]:
    held, bodies = shell_words.hold(text)
    held = _DUP.sub(lambda m: ">" if m.group(0).startswith("&") else " ", held)
    try:
        joined = held.replace("\\\n", " ").replace("\n", " ; ")
        lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = [shell_words.restore(t, bodies) for t in lexer]
    except ValueError as exc:
        raise InputError("launch command", f"cannot parse {text!r}: {exc}") from None
    return _parse_segments(tokens, exported, depth, folder)


def _parse_segments(
    tokens: Sequence[str], exported: dict[str, str], depth: int, start: str = ""
) -> list[Launch]:
    """Commands between separators; ``export VAR=…`` and bare ``VAR=…`` statements apply to
    the commands after them (``exported`` is updated in place)."""
    launches: list[Launch] = []
    segment: list[str] = []
    folder: str | None = start  # where a literal ``cd`` went ("": where it started; None: not known)
    for tok in [*tokens, ";"]:
        if tok not in _SEPARATORS:
            segment.append(tok)
            continue
        segment = _without_redirections(segment)
        if not segment:
            continue
        if segment[0] == "cd":
            folder = _cd(folder, segment[1:])
        elif segment[0] == "export":
            for tok2 in segment[1:]:
                if "=" in tok2:
                    k, _, v = tok2.partition("=")
                    exported[k] = v
        else:
            for launch in _parse_tokens(shell_join(segment), segment, dict(exported), depth, folder or ""):
                if launch.launcher == "env":
                    exported.update(launch.env)
                else:  # a script's launches are placed where it ran them (plan/shell_follow)
                    launches.append(_moved(launch, folder) if folder and not launch.source else launch)
        segment = []
    return launches


def parse_launches(
    text: str | Sequence[str] | None = None, argv: Sequence[str] | None = None
) -> list[Launch]:
    """Parse launch text (one or more commands joined by newlines, ``;``, ``&&`` or ``&``) and
    then ``argv``: one command as the shell passed it (its words are not split again; a word
    that is exactly ``;``, ``&&`` or ``&`` separates commands). A list for ``text`` is argv
    too. Variables exported in the text apply to the commands after them, argv's included.
    """
    if text is not None and not isinstance(text, str):
        argv = [*text, *(argv or [])]
        text = None
    exported: dict[str, str] = {}
    if text and "#SBATCH" in text:  # a batch script's text: its lines run in its allocation
        from envdoctor.plan.launchers.sbatch import allocation_env, sbatch_options

        exported.update(allocation_env(sbatch_options(text)))
        text = _without_comment_lines(text)
    launches = _parse_text(text, exported, 0) if text else []
    if argv:
        given = _parse_segments(list(argv), exported, 0)
        if text is not None or launches:  # beside --launch lines: the trainer's by the CLI's convention
            given = [dataclasses.replace(lx, from_argv=True) for lx in given]
        launches += given
    return launches


#: what the shell-script follower hands each command of a script to (plan/shell_follow)
_PARSER = Parser(parse=_parse_text)
