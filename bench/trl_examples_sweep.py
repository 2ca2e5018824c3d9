"""Sweep TRL's own GRPO examples at every release line through `envdoctor check` (and `hook`).

Healthy published setups must get no false warning or error (issue 35). For each TRL release tag
from v0.14.0 to the newest in a local git mirror (the last patch release of each minor line), this
reads every GRPO-relevant example of that release:

- example scripts: ``examples/scripts/*grpo*.py``, ``*gspo*.py``, ``*rloo*.py`` (only those that
  use vLLM), ``examples/scripts/openenv/*.py`` and ``trl/scripts/grpo.py``, each with the launch
  lines of its docstring as written (``\\`` continuations kept: envdoctor joins them; a
  ``trl vllm-serve`` line goes with the trainer line that follows it), or ``python SCRIPT``;
- the docs' code blocks of ``docs/source/{grpo_trainer,vllm_integration,speeding_up_training,
  reducing_memory_usage,distributing_training}.md`` (``--more-docs``: the other pages of DOCS):
  shell blocks' launch lines (a ``train.py``, an accelerate config or a ``--config`` YAML they name
  that the release does not ship is the matching Python / YAML block of their section), YAML
  blocks of GRPO keys no line runs (under ``trl/scripts/grpo.py``), and Python blocks that build a
  ``GRPOConfig`` no line runs (``accelerate launch --num_processes 1 train.py``, as the docs launch
  snippets; 8 processes for the pages past the core ones; before TRL 0.16 with vLLM on a GPU of
  its own, 3 processes on 4 GPUs);
- ``examples/accelerate_configs/*.yaml``, each launching ``trl/scripts/grpo.py``;
- with ``--open-r1 MIRROR``: open-r1's README GRPO runs at the newest commit of each TRL pin of
  its setup.py (the stack from its pins; a TRL commit pin as the dev release of the next tag).

Each becomes one `envdoctor check --format json` run in a copy of the release's tree, judged as if
the release's stack were installed (``--assume trl==TAG`` plus the vLLM / torch / transformers /
accelerate that release line allows: ``bench/heldout_eval.py`` TABLE, extended below for lines it
lacks) on a snapshot of H100s as many as the run's launch lines place (8 where a placeholder
such as ``$NUM_GPUS`` or ``<num_processes>`` hides it; ``--gpus N`` for one size). ``--hook`` also
runs `envdoctor hook` on the config files each run names.

The mirrors are fetched by hand once (no network at run time):

    git clone --mirror https://github.com/huggingface/trl /tmp/trl.git     # or any clone with tags
    git clone --mirror https://github.com/huggingface/open-r1 /tmp/open-r1.git
    python bench/trl_examples_sweep.py --mirror /tmp/trl.git [--open-r1 /tmp/open-r1.git]
        [--more-docs] [--hook] [--json OUT.json] [--tags v0.19.1,...]

Prints a table (tag, example, GPUs, exit code, warning and error rule ids), the totals, and every
warning or error that ``TRUE`` (findings judged true on these examples, with why) does not
explain: a false finding, or one to judge. ``--json`` writes every run's inputs and findings.
``--subprocess`` runs each check as its own process instead of in-process (slower; the same
results). Results and their reading: docs/validation/trl-examples-sweep.md.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from heldout_eval import TABLE as HELDOUT_TABLE  # noqa: E402

# The stack per TRL line: bench/heldout_eval.py's table (the lines this sweep added to it, 0.27 to
# 1.9, now stand there once)
TABLE = HELDOUT_TABLE
DOCS = (
    "grpo_trainer",
    "vllm_integration",
    "speeding_up_training",
    "reducing_memory_usage",
    "distributing_training",
    # more pages with GRPO launch lines or GRPOConfig(...) blocks (with --more-docs)
    "paper_index",
    "clis",
    "openenv",
    "lora_without_regret",
    "peft_integration",
    "gspo_token",
    "liger_kernel_integration",
    "quickstart",
)
CORE_DOCS = 5
SCRIPT_GLOBS = ("examples/scripts/*grpo*.py", "examples/scripts/*gspo*.py", "examples/scripts/openenv/*.py")
ARCHIVED = ("examples", "trl/scripts", "trl/accelerate_configs", "docs/source")
H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"}
#: a shell word that is a documentation placeholder: `$NUM_GPUS`, `<num_processes>`, `{N}`
PLACEHOLDER = re.compile(r"\$\{?\w+\}?|<[^<>\s]+>|\{\w+\}")
TRAINER = re.compile(r"(^|\s)(accelerate\s+launch|torchrun|deepspeed|python3?|trl\s+grpo)(\s|$)")
SERVER = re.compile(r"(^|\s)(trl\s+vllm-serve|vllm\s+serve)(\s|$)")
GRPO_CODE = re.compile(r"\bGRPO(Config|Trainer)\b")


@dataclass
class Case:
    """One check input: the launch lines (servers first, the trainer last) and files written."""

    tag: str
    example: str
    launches: list[str]
    files: dict[str, str] = field(default_factory=dict)  # path -> text, written before the check
    gpus: int = 1
    packages: dict[str, str] = field(default_factory=dict)  # the stack (default: the tag's line's)
    result: dict = field(default_factory=dict)  # check's
    hook: dict = field(default_factory=dict)  # hook's, with --hook


#: findings judged true on these examples (category a: the example meets a real bug of its
#: release, or TRL's own docs are wrong), by rule and message; every other warning or error is
#: printed as unexplained: a false finding of envdoctor, or one to judge and add here
TRUE = (
    ("KNF001", r"biased by a positive top_k", "trl#6789: the OpenEnv examples sample with top_k"),
    ("KNF001", r"LoRA under ZeRO-3 with gradient checkpointing", "trl#6356: --use_peft under ZeRO-3"),
    ("KNF001", r"raw logprobs|logprobs taken before temperature", "trl#4873: server mode of 0.23-0.27"),
    ("KNF001", r"truncate conversational prompts|untruncated prompt", "colocate truncation (long prompts)"),
    ("KNF001", r"before TRL 0.18 does not support FSDP", "this bench pairs fsdp_qlora.yaml with grpo.py"),
    ("CFG001", r"`max_prompt_length` .*deprecated", "TRL 0.26-0.27 deprecate max_prompt_length"),
    ("CFG001", r"`max_prompt_length` .*was removed", "paper_index.md keeps a key TRL 0.28 removed"),
    ("CFG002", r"num_generations \(32\)", "grpo_continuous_batching.py's one-GPU usage line"),
    (
        "CFG002",
        r"global batch 2 = per_device_train_batch_size \(2\) × processes \(1\)",
        "peft_integration.md",
    ),
    (
        "CFG004",
        r"`--server_ip`",
        "grpo_trainer.md passes --server_ip; its script declares --vllm_server_host",
    ),
    ("CFG004", r"`dataset_configs`", "open-r1 recipes of the TRL 0.16 era: a key nothing declares"),
    (
        "REP005",
        r"README\.md line \d+: `accelerate launch --config_file …` does not end in `\\`",
        "open-r1's README: the override examples lack the `\\` after `--config …yaml`",
    ),
)


def why_true(finding: dict) -> str | None:
    return next(
        (
            why
            for rule, pattern, why in TRUE
            if finding["rule"] == rule and re.search(pattern, finding["message"])
        ),
        None,
    )


# ---------------------------------------------------------------- the mirror


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(mirror), *args], check=True, capture_output=True, text=True
    ).stdout


def release_tags(mirror: Path, first: str = "v0.14.0") -> list[str]:
    """The last patch release of each minor line from ``first`` on (release candidates left out)."""
    tags = [t for t in git(mirror, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]

    def key(t: str) -> tuple[int, ...]:
        return tuple(int(x) for x in t[1:].split("."))

    tags = [t for t in sorted(tags, key=key) if key(t) >= key(first)]
    last: dict[tuple[int, ...], str] = {}
    for t in tags:
        last[key(t)[:2]] = t
    return list(last.values())


def extract(mirror: Path, tag: str, dest: Path, archived: tuple[str, ...] = ARCHIVED) -> None:
    paths = [p for p in archived if git(mirror, "ls-tree", "--name-only", tag, p).strip()]
    data = subprocess.run(
        ["git", "--git-dir", str(mirror), "archive", "--format=tar", tag, *paths],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


# ---------------------------------------------------------------- launch lines out of text


def commands(text: str) -> list[str]:
    """Shell commands of a block of text as the document writes them (``\\`` continuations
    kept: envdoctor's launch parser joins them), whole-line comments and ``$ `` prompts dropped."""
    out, cur = [], []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.lstrip().startswith("#") and not cur:
            continue
        cur.append(line)
        if line.endswith("\\"):
            continue
        cmd = "\n".join(cur).strip()
        cur = []
        if cmd.startswith("$ "):
            cmd = cmd[2:]
        if cmd:
            out.append(cmd)
    return out


def one_line(cmd: str) -> str:
    """A command on one line, for the table and the heuristics of this bench."""
    return " ".join(cmd.replace("\\\n", " ").split())


def is_server(cmd: str) -> bool:
    return bool(SERVER.search(cmd))


def is_trainer(cmd: str) -> bool:
    cmd = one_line(cmd)
    if is_server(cmd) or not TRAINER.search(cmd):
        return False
    if re.search(r"(^|\s)python3?\s+-m\s+(pip|venv)\b", cmd) or "pip install" in cmd:
        return False
    module = re.search(r"\s-m\s+(\S+)", cmd)
    return ".py" in cmd or "trl grpo" in cmd or bool(module and re.search(r"trl|grpo|train", module.group(1)))


def runs(cmds: list[str]) -> list[list[str]]:
    """Group commands into runs: the servers started before a trainer line go with it."""
    done, servers = [], []
    for c in cmds:
        if is_server(c):
            servers.append(c)
        elif is_trainer(c):
            done.append([*servers, c])
            servers = []
    return done


def script_of(cmd: str) -> str | None:
    try:
        words = shlex.split(one_line(cmd))
    except ValueError:
        return None
    return next((w for w in words if w.endswith(".py")), None)


# ---------------------------------------------------------------- the examples of one release


def script_cases(tag: str, tree: Path) -> list[Case]:
    paths = sorted({p for g in SCRIPT_GLOBS for p in tree.glob(g)})
    paths += [p for p in sorted(tree.glob("examples/scripts/*rloo*.py")) if "vllm" in p.read_text()]
    if (tree / "trl/scripts/grpo.py").exists():
        paths.append(tree / "trl/scripts/grpo.py")
    cases = []
    for p in paths:
        rel = str(p.relative_to(tree))
        try:
            doc = ast.get_docstring(ast.parse(p.read_text())) or ""
        except SyntaxError:
            doc = ""
        found = [
            r
            for r in runs(commands(doc))
            if script_of(r[-1]) in (rel, None) or rel.endswith(str(script_of(r[-1])))
        ]
        if not found:
            found = [[f"python {rel}"]]
        for i, r in enumerate(found):
            cases.append(Case(tag, f"{rel}#{i + 1}" if len(found) > 1 else rel, r))
    return cases


SHELL = ("bash", "sh", "shell", "console", "")
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(md: str, level: int = 2) -> list[tuple[int, str, str]]:
    """The fenced blocks of a Markdown text: (section number, language, text); a heading of
    ``level`` or less starts a section."""
    out, lang, buf, section = [], None, [], 0
    for line in md.splitlines():
        m = FENCE.match(line.strip())
        if lang is None and m:
            lang, buf = m.group(1).lower(), []
        elif lang is not None and line.strip() == "```":
            out.append((section, lang, "\n".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
        elif re.match(rf"#{{1,{level}}}\s", line):
            section += 1
    return out


def _is_script(lang: str, text: str) -> bool:
    return lang == "python" and bool(GRPO_CODE.search(text))


def _is_python(lang: str, text: str) -> bool:
    return lang == "python" and bool(re.search(r"\b\w+(Config|Trainer)\(", text))


def _other_trainer(c: str, found: list[tuple[int, str, str]], k: int) -> bool:
    """A launch line of another trainer (SFT, DPO): a TRL script of another name, or a script whose
    nearest trainer code block builds no GRPO trainer."""
    script = script_of(c) or ""
    if re.search(r"(^|/)(trl/scripts|examples/scripts)/", script) and not re.search(
        r"grpo|gspo|rloo", script
    ):
        return True
    j = _block_for(found, k, _is_python)
    return (
        j is not None and not GRPO_CODE.search(found[j][2]) and not script.startswith(("trl/", "examples/"))
    )


def _is_grpo_yaml(lang: str, text: str) -> bool:
    """A YAML block of GRPO config keys (not an accelerate config, not another trainer's)."""
    if lang not in ("yaml", "yml") or "distributed_type" in text or not re.search(r"^\w+:", text, re.M):
        return False
    return not re.search(
        r"\b(sft|dpo|kto|reward|rloo)_config\b|^\s*#\s*(sft|dpo|kto|reward|rloo)", text, re.M
    )


def _is_accelerate(lang: str, text: str) -> bool:
    return lang in ("yaml", "yml") and "distributed_type" in text


def _block_for(
    found: list[tuple[int, str, str]],
    k: int,
    kind: Callable[[str, str], bool],
    name: str = "",
    above_first: bool = False,
) -> int | None:
    """The block of ``kind`` a launch line of block ``k`` names (its script ``name``, its
    accelerate config), within its section: one that names the file (``# train_grpo.py``), else a
    whole script (it calls ``.train()``) before a snippet (``GRPOConfig(...)``), the nearest first
    (the docs show the script above or below its launch line); with ``above_first`` the nearest
    above it when there is one."""
    section = found[k][0]
    code = [j for j, (s, lang, text) in enumerate(found) if s == section and kind(lang, text)]
    above = [j for j in code if j < k]
    if above_first and above:
        return above[-1]

    def rank(j: int) -> tuple[bool, bool, int, bool]:
        text = found[j][2]
        named = bool(name) and Path(name).name in text
        return (not named, ".train()" not in text, abs(j - k), j > k)

    return min(code, key=rank, default=None)


def doc_cases(tag: str, tree: Path, more: bool = False) -> list[Case]:
    cases = []
    for name in DOCS if more else DOCS[:CORE_DOCS]:
        path = tree / "docs" / "source" / f"{name}.md"
        if not path.exists():
            continue
        found = blocks(path.read_text())
        used: set[int] = set()
        servers: list[str] = []
        n = 0
        for k, (_, lang, text) in enumerate(found):
            if lang in ("bash", "sh", "shell", "console", ""):
                cmds = commands(text)
                if any(is_server(c) for c in cmds):
                    servers = []  # another block's servers are an alternative, not a second server
                for c in cmds:
                    if is_server(c):
                        servers.append(c)
                        continue
                    if not is_trainer(c) or _other_trainer(c, found, k):
                        continue
                    n += 1
                    case = Case(tag, f"docs/{name}.md#{n}", [*servers, c])
                    servers = []
                    script = script_of(c)
                    j = _block_for(found, k, _is_script, script or "")
                    if script and not (tree / script).exists() and j is not None:
                        case.files[script] = found[j][2]
                        used.add(j)
                    cfg = re.search(r"--config_file[= ](\S+)", one_line(c))
                    j = _block_for(found, k, _is_accelerate, above_first=True)
                    if cfg and not (tree / cfg.group(1)).exists() and j is not None:
                        case.files[cfg.group(1)] = found[j][2]
                    grpo = re.search(r"--config[= ](\S+\.ya?ml)", one_line(c))
                    j = _block_for(found, k, _is_grpo_yaml, grpo.group(1) if grpo else "")
                    if grpo and not (tree / grpo.group(1)).exists() and j is not None:
                        case.files[grpo.group(1)] = found[j][2]
                        used.add(j)
                    cases.append(case)
        for k, (_, lang, text) in enumerate(found):
            if k in used or not _is_grpo_yaml(lang, text):
                continue
            n += 1
            line = "python trl/scripts/grpo.py --config grpo.yaml"
            cases.append(Case(tag, f"docs/{name}.md#{n} (yaml)", [line], files={"grpo.yaml": text}))
        for k, (_, lang, text) in enumerate(found):
            if lang != "python" or k in used or "GRPOConfig(" not in text:
                continue
            n += 1
            # TRL before 0.16 generates on a GPU of its own beside the training ranks: its docs
            # launch N-1 processes on N GPUs (`--multi_gpu --num_processes 3` on 4)
            # the pages past the core ones show settings of runs at scale (paper_index: a paper's
            # recipe): 8 processes
            legacy = tag < "v0.16" and "use_vllm" in text
            line = (
                "accelerate launch --multi_gpu --num_processes 3 train.py"
                if legacy
                else "accelerate launch --num_processes 8 train.py"
                if name not in DOCS[:CORE_DOCS]
                else "accelerate launch --num_processes 1 train.py"
            )
            cases.append(Case(tag, f"docs/{name}.md#{n} (python)", [line], files={"train.py": text}))
    return cases


def accelerate_cases(tag: str, tree: Path) -> list[Case]:
    return [
        Case(
            tag,
            str(p.relative_to(tree)),
            [
                f"accelerate launch --config_file {p.relative_to(tree)} trl/scripts/grpo.py "
                "--model_name_or_path Qwen/Qwen2-0.5B-Instruct --dataset_name trl-lib/tldr "
                "--output_dir out"
            ],
        )
        for p in sorted(tree.glob("examples/accelerate_configs/*.yaml"))
        if (tree / "trl/scripts/grpo.py").exists()
    ]


# ---------------------------------------------------------------- open-r1's recipes

OPEN_R1_FILES = ("README.md", "setup.py", "src", "recipes")
_PIN = re.compile(r'"(torch|transformers|vllm|trl)(?:\[\w+\])?(==[^"]+| @ git\+[^"]+@([0-9a-f]{7,40}))"')


def open_r1_commits(mirror: Path) -> list[str]:
    """The newest commit of each distinct TRL pin of open-r1's setup.py that has src/open_r1/grpo.py."""
    seen, out = set(), []
    for c in git(mirror, "log", "--format=%h", "--", "setup.py").split():
        setup = git(mirror, "show", f"{c}:setup.py")
        trl = next((m.group(2) for m in _PIN.finditer(setup) if m.group(1) == "trl"), None)
        has = git(mirror, "ls-tree", "--name-only", c, "src/open_r1/grpo.py").strip()
        if trl and "@main" not in setup and has and trl not in seen:
            seen.add(trl)
            out.append(c)
    return out


def open_r1_stack(mirror: Path, commit: str, trl_mirror: Path | None) -> dict[str, str]:
    """setup.py's exact pins; a TRL commit pin as the dev release of the next TRL tag (from the
    TRL mirror); vLLM, where the TRL extra picks it, from TABLE."""
    pins: dict[str, str] = {}
    for m in _PIN.finditer(git(mirror, "show", f"{commit}:setup.py")):
        name, pin, sha = m.group(1), m.group(2), m.group(3)
        if pin.startswith("=="):
            pins[name] = pin[2:]
        elif sha and name == "trl" and trl_mirror is not None:
            tag = git(trl_mirror, "describe", "--tags", "--contains", sha).strip().split("~")[0]
            pins[name] = tag.lstrip("v") + ".dev0"
    line = ".".join(pins.get("trl", "0.18.0").split(".")[:2])
    for name, v in TABLE[line].items():
        pins.setdefault(name, v)
    return pins


def open_r1_cases(commit: str, tree: Path, packages: dict[str, str]) -> list[Case]:
    """The README's GRPO runs as it writes them (servers with the trainer line after them).
    Recipes the README does not run are left out: slurm/train.slurm sizes their jobs from
    variables this bench would have to guess."""
    found, servers, last = [], [], -1
    for section, lang, text in blocks((tree / "README.md").read_text(), level=6):
        if lang not in SHELL:
            continue
        cmds = commands(text)
        if any(is_server(c) for c in cmds) or section != last:
            servers = []  # another block's servers are an alternative, not a second server
        for c in cmds:
            if is_server(c):
                servers.append(c)
            elif is_trainer(c):
                if "grpo.py" in (script_of(c) or ""):
                    found.append([*servers, c])
                servers = []
        last = section
    return [Case(commit, f"open-r1 README#{i + 1}", r, packages=packages) for i, r in enumerate(found)]


# ---------------------------------------------------------------- the machine a run needs


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)]


def gpus_needed(case: Case, tree: Path) -> int:
    """The GPUs the run's launch lines place (8 where a placeholder hides the count)."""
    need, unknown = 1, False
    for line in map(one_line, case.launches):
        if PLACEHOLDER.search(line):
            unknown = True
        m = re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", line)
        if m:
            ids = _ints(m.group(1))
            need = max(need, max(ids) + 1 if ids else 1)
        for flag in ("num_processes", "nproc_per_node", "nproc-per-node", "num-processes", "num_gpus"):
            v = re.search(rf"--{flag}[= ](\S+)", line)
            if v:
                ids = _ints(v.group(1))
                need = max(need, ids[0] if ids else 8)
                unknown |= not ids
        tp = re.search(r"--tensor[-_]parallel[-_]size[= ](\d+)", line)
        if tp and not m:
            need = max(need, int(tp.group(1)) + (1 if len(case.launches) > 1 else 0))
        cfg = re.search(r"--config_file[= ](\S+)", line)
        if cfg and (tree / cfg.group(1)).is_file():
            np_ = re.search(r"^num_processes:\s*(\d+)", (tree / cfg.group(1)).read_text(), re.M)
            if np_:
                need = max(need, int(np_.group(1)))
        # `trl grpo`: a config TRL ships (8 processes), or accelerate's keys in the config file
        grpo = re.search(r"--config[= ](\S+\.ya?ml)", line)
        text = case.files.get(grpo.group(1), "") if grpo else ""
        if "--accelerate_config" in line or re.search(r"^accelerate_config:", text, re.M):
            need = max(need, 8)
        np_ = re.search(r"^num_processes:\s*(\d+)", text, re.M)
        if np_ and "--num_processes" not in line:
            need = max(need, int(np_.group(1)))
    servers = sum(1 for line in case.launches if is_server(line) and "CUDA_VISIBLE_DEVICES" not in line)
    need += servers
    # TRL before 0.16 generates with vLLM in-process on the GPU after the training ranks: the docs
    # of those releases ask for one GPU more than the processes (vllm_device="auto")
    script = script_of(case.launches[-1]) or ""
    code = case.files.get(script) or (
        (tree / script).read_text() if script and (tree / script).is_file() else ""
    )
    if not servers and case.tag < "v0.16" and "use_vllm" in code + case.launches[-1]:
        need += 1
    return 8 if unknown else min(max(need, 1), 8)


def snapshot(n: int, packages: dict[str, str]) -> dict:
    gpus = [
        {
            "index": i,
            "uuid": f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}",
            "name": H100["name"],
            "memory_total_mib": H100["memory_total_mib"],
            "memory_used_mib": 0,
            "memory_free_mib": H100["memory_total_mib"],
            "compute_capability": H100["compute_capability"],
            "mig": False,
            "processes": [],
        }
        for i in range(n)
    ]
    return {
        "schema": "envdoctor.facts/1",
        "python": "3.11.9",
        "platform": "Linux-x86_64",
        "driver": {"version": "570.86.15", "cuda": "12.8"},
        "packages": {k: {"version": v} for k, v in packages.items()},
        "gpus": gpus,
        "env": {},
    }


def stack(tag: str) -> dict[str, str]:
    line = ".".join(tag[1:].split(".")[:2])
    return {"trl": tag[1:], **TABLE[line]}


# ---------------------------------------------------------------- running envdoctor


def envdoctor(args: list[str], tree: Path, in_process: bool) -> tuple[int, str]:
    """Run ``envdoctor ARGS`` in ``tree``: its exit code and standard output."""
    if not in_process:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA", "PYTORCH"))}
        env.update(PYTHONPATH=str(ROOT), NO_COLOR="1")
        proc = subprocess.run(
            [sys.executable, "-m", "envdoctor", *args], cwd=tree, env=env, capture_output=True, text=True
        )
        return proc.returncode, proc.stdout
    from click.testing import CliRunner

    from envdoctor.cli import cli
    from envdoctor.errors import InputError

    cwd = os.getcwd()
    os.chdir(tree)
    try:
        got = CliRunner().invoke(cli, args, env={"NO_COLOR": "1"})
    finally:
        os.chdir(cwd)
    if isinstance(got.exception, InputError):  # `envdoctor` says it and exits 2
        return 2, f"envdoctor: error: {got.exception}"
    if got.exception is not None and not isinstance(got.exception, SystemExit):
        import traceback

        return got.exit_code, got.stdout + "".join(traceback.format_exception(got.exception))[-1500:]
    return got.exit_code, got.stdout


def _findings(rc: int, out: str, reports: Callable[[dict], list[dict]]) -> dict:
    try:
        data = json.loads(out)
    except ValueError:
        return {"rc": rc, "raw": out[-800:]}
    every = [f for report in reports(data) for f in report.get("findings", [])]
    return {
        "rc": rc,
        "findings": [
            {"rule": f["rule"], "severity": f["severity"], "message": f["message"][:400]}
            for f in every
            if f["severity"] in ("warning", "error")
        ],
        "info": [  # ALC003 (allocator advice) comes on every run
            {"rule": f["rule"], "message": f["message"][:300]}
            for f in every
            if f["severity"] == "info" and f["rule"] != "ALC003"
        ],
    }


def run_case(case: Case, tree: Path, in_process: bool, gpus: int | None = None, hook: bool = False) -> None:
    """`envdoctor check` (and with ``hook`` `envdoctor hook` on the run's config files) on one case."""
    for rel, text in case.files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    case.gpus = gpus or gpus_needed(case, tree)
    pkgs = case.packages or stack(case.tag)
    assume = [a for name, v in pkgs.items() for a in ("--assume", f"{name}=={v}")]
    (tree / "facts.json").write_text(json.dumps(snapshot(case.gpus, pkgs)))
    args = ["check", "--format", "json", "--no-network", "--facts", "facts.json", *assume]
    for line in case.launches:
        args += ["--launch", line]
    case.result = _findings(*envdoctor(args, tree, in_process), lambda d: [d])
    if hook:
        trainer = one_line(case.launches[-1])
        files = [m for m in re.findall(r"--config(?:_file)?[= ](\S+)", trainer) if (tree / m).is_file()]
        args = ["hook", "--format", "json", *assume, "--launch", case.launches[-1], *files]
        if not files:  # the hook checks config files: none here
            case.hook = {"rc": None, "skipped": "no config file"}
        else:
            rc, out = envdoctor(args, tree, in_process)
            quiet = rc == 0 and not out.strip()  # none of the files is a GRPO or accelerate config
            case.hook = (
                {"rc": rc, "skipped": "the hook judged none of the files"}
                if quiet
                else _findings(rc, out, lambda d: [f["report"] for f in d.get("files", [])])
            )
    for rel in case.files:
        (tree / rel).unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--mirror", type=Path, required=True, help="a git directory of huggingface/trl with its tags"
    )
    ap.add_argument(
        "--tags", help="comma-separated tags (default: the last patch of each line from v0.14.0; '' for none)"
    )
    ap.add_argument("--json", type=Path, help="write every run's inputs and findings here")
    ap.add_argument("--subprocess", action="store_true", help="one `python -m envdoctor` per check")
    ap.add_argument("--only", help="only examples whose name contains this text")
    ap.add_argument(
        "--open-r1", type=Path, help="also open-r1's README runs and GRPO recipes (a git directory)"
    )
    ap.add_argument(
        "--more-docs", action="store_true", help="also the docs pages after the first five of DOCS"
    )
    ap.add_argument("--hook", action="store_true", help="also `envdoctor hook` on each run's config files")
    ap.add_argument("--gpus", type=int, help="every run on this many GPUs (default: as many as it places)")
    opts = ap.parse_args()
    tags = [t for t in opts.tags.split(",") if t] if opts.tags is not None else release_tags(opts.mirror)
    results: list[Case] = []
    start = time.perf_counter()
    for tag in tags:
        with tempfile.TemporaryDirectory(prefix=f"trl-{tag}-") as tmp:
            tree = Path(tmp)
            extract(opts.mirror, tag, tree)
            cases = (
                script_cases(tag, tree) + doc_cases(tag, tree, opts.more_docs) + accelerate_cases(tag, tree)
            )
            for case in cases:
                if opts.only and opts.only not in case.example:
                    continue
                run_case(case, tree, not opts.subprocess, opts.gpus, opts.hook)
                results.append(case)
    for commit in open_r1_commits(opts.open_r1) if opts.open_r1 else []:
        with tempfile.TemporaryDirectory(prefix=f"open-r1-{commit}-") as tmp:
            tree = Path(tmp)
            extract(opts.open_r1, commit, tree, OPEN_R1_FILES)
            packages = open_r1_stack(opts.open_r1, commit, opts.mirror)
            for case in open_r1_cases(commit, tree, packages):
                if opts.only and opts.only not in case.example:
                    continue
                run_case(case, tree, not opts.subprocess, opts.gpus, opts.hook)
                results.append(case)
        tags.append(f"open-r1@{commit}")
    elapsed = time.perf_counter() - start
    print_table(results, opts.hook)
    for name in ("check", "hook") if opts.hook else ("check",):
        got = [c.result if name == "check" else c.hook for c in results]
        warn = sum(1 for r in got if any(f["severity"] == "warning" for f in r.get("findings", [])))
        err = sum(1 for r in got if any(f["severity"] == "error" for f in r.get("findings", [])))
        bad = sum(1 for r in got if "findings" not in r and "skipped" not in r)
        ran = sum(1 for r in got if "skipped" not in r)
        print(
            f"{name}: {ran} runs over {len(tags)} tags: {warn} with a warning, {err} with an error, "
            f"{bad} without a JSON report"
        )
    print(f"({elapsed:.1f} s; '!' marks an error)")
    for name in ("check", "hook") if opts.hook else ("check",):
        got = [(c, c.result if name == "check" else c.hook) for c in results]
        odd = [(c, f) for c, r in got for f in r.get("findings", []) if why_true(f) is None]
        bad = [(c, r) for c, r in got if "findings" not in r and "skipped" not in r]
        for sev in ("warning", "error"):
            runs_ = {c.example + c.tag for c, f in odd if f["severity"] == sev}
            print(f"{name}: {len(runs_)} runs with a {sev} not in TRUE (false, or still to judge)")
        for c, f in odd:
            print(f"  {name} {c.tag} {c.example}: {f['rule']} {f['severity']}: {f['message'][:160]}")
        for c, r in bad:
            print(f"  {name} {c.tag} {c.example}: no report: {r.get('raw', '')[-160:]}")
    if opts.json:
        rows = [
            {
                "tag": c.tag,
                "example": c.example,
                "launches": c.launches,
                "gpus": c.gpus,
                "files": sorted(c.files),
                **c.result,
                **({"hook": c.hook} if opts.hook else {}),
            }
            for c in results
        ]
        opts.json.write_text(json.dumps(rows, indent=1))


def _ids(result: dict) -> str:
    if "skipped" in result:
        return "-"
    fs = result.get("findings")
    if fs is None:
        return "(no JSON: " + result.get("raw", "")[-60:].replace("\n", " ") + ")"
    return ", ".join(f"{f['rule']}{'!' if f['severity'] == 'error' else ''}" for f in fs)


def print_table(results: list[Case], hook: bool) -> None:
    print(
        f"{'tag':<8} {'example':<58} {'gpus':>4} {'rc':>3}  warnings / errors" + ("  | hook" if hook else "")
    )
    for c in results:
        tail = f"  | {c.hook.get('rc')} {_ids(c.hook)}" if hook else ""
        print(f"{c.tag:<8} {c.example[:58]:<58} {c.gpus:>4} {c.result['rc']:>3}  {_ids(c.result)}{tail}")
    print()


if __name__ == "__main__":
    main()
