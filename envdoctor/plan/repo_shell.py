"""What a repository's shell launch scripts do when bash runs them as written (``envdoctor hook``).

Read, never run; each item names its file and line:

- ``crlf``: a launch script (``*.sh``, ``*.bash``, ``*.slurm``, ``*.sbatch``) with Windows line
  ends: bash keeps the ``\\r`` in the last word of every line (``$'\\r': command not found``,
  ``--config x.yaml\\r``) and a ``\\`` before it no longer continues the line. A script whose
  committed copy has LF ends (``git ls-files --eol``: a Windows checkout with autocrlf) is not
  said.
- ``split``: a launch command (``accelerate launch``, ``torchrun``, ``trl vllm-serve``,
  ``python x.py`` …) whose next line starts with an option (``--port 8000``) while the command's
  line does not end in ``\\`` (or ends in ``\\`` followed by a space or a comment, which escapes
  the space, not the newline): bash runs the launch without those options and then the option
  line as a command of its own. In a README's shell block the user who copies it meets the same.
- ``unexported``: a variable that a launched process reads from its environment (``NCCL_*``,
  ``CUDA_*`` but ``CUDA_VISIBLE_DEVICES``, which ``repo_paths`` reads, ``PYTORCH_*``, ``VLLM_*`` …)
  set alone on a line, never exported (nor ``set -a``), not given to the command on its line
  and not read by the script as ``$NAME``: the launch does not see it.
- ``lora_comma``: a list option whose words end in commas (``--lora_target_modules "q_proj",
  "v_proj"``): argparse keeps the comma in the value (``q_proj,``), which names no module.
- ``unset``: ``$NAME`` in a required argument of a launch (the script, ``--config``,
  ``--model_name_or_path`` …) that the script never sets, no other file of the repository names,
  and no scheduler or launcher provides: the argument is empty.

- ``shared_gpus`` / ``full_memory``: the launch scripts of one run read together
  (``envdoctor.plan.repo_gpus``).

Lines and words are read as bash reads them (``envdoctor.plan.shell_lines``). Bounded: at most
``MAX_SCRIPTS`` scripts of ``MAX_BYTES`` each, ``MAX_FOUND`` items per kind.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from envdoctor.plan.readme_blocks import readme_blocks
from envdoctor.plan.repo_gpus import _Start, blocking_servers, gpu_starts, shared_gpus
from envdoctor.plan.repo_walk import walk
from envdoctor.plan.shell_lines import EXPORT, bash_lines, is_launch, line_runs, may_launch, option_line

SCRIPT_PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
README_PATTERNS = ("README*.md", "readme*.md", "Readme*.md")
MAX_SCRIPTS = 200
MAX_BYTES = 512 * 1024
MAX_DEPTH = 6
MAX_FOUND = 50
_SKIP_DIRS = frozenset(
    {".git", "node_modules", "site-packages", "dist-packages", "__pycache__", "venv", ".venv", "wandb"}
)
#: environment variables a launched process reads: set without export, it never sees them
_CHILD_ENV = re.compile(
    r"^(?:NCCL_\w+|CUDA_\w+|PYTORCH_\w+|TORCH_\w+|TORCHINDUCTOR_\w+|VLLM_\w+|HF_\w+|HUGGINGFACE_\w+|"
    r"TRANSFORMERS_\w+|TOKENIZERS_PARALLELISM|ACCELERATE_\w+|WANDB_\w+|OMP_NUM_THREADS|MKL_\w+|"
    r"TRITON_\w+|DS_\w+|DEEPSPEED_\w+|NVIDIA_\w+|XFORMERS_\w+|FLASH_ATTENTION_\w+|"
    r"MASTER_ADDR|MASTER_PORT|GLOO_\w+|UCX_\w+|FI_\w+|TRL_\w+)$"
)
_ASSIGN_ALONE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_ASSIGN_START = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=")
_ALLEXPORT = re.compile(r"^\s*set\s+(?:-[a-zA-Z]*a[a-zA-Z]*|-o\s+allexport)\b")
#: lines that set variables whose names the script does not write (``export $(cat .env | xargs)``)
_SETS_UNKNOWN = re.compile(r"\beval\s|\b(?:export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*[\"']?\$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+\S")
#: options whose value lists are read with nargs (a comma left in a word stays in the value)
_LIST_OPTIONS = re.compile(r"^--?(?:lora_target_modules|lora-target-modules|target_modules|target-modules)$")
#: arguments without which the launch cannot start: a variable left empty there breaks it
_REQUIRED = frozenset(
    {
        "--config",
        "--config_file",
        "--config-file",
        "--model",
        "--model_name_or_path",
        "--model-name-or-path",
        "--deepspeed",
        "--dataset_name",
        "--dataset-name",
    }
)
#: variables a shell, scheduler or launcher sets for the script
_PROVIDED = re.compile(
    r"^(?:\d+|[@*#?$!0-9-]|HOME|USER|LOGNAME|PWD|OLDPWD|PATH|SHELL|HOSTNAME|HOST|RANDOM|SECONDS|"
    r"LINENO|UID|EUID|PPID|TMPDIR|LANG|TERM|CONDA_\w+|VIRTUAL_ENV|BASH\w*|SLURM_\w+|PBS_\w+|"
    r"LSB_\w+|OMPI_\w+|PMI_\w+|PMIX_\w+|SGE_\w+|JOB_\w+|MLP_\w+|ARNOLD_\w+|PET_\w+|KUBERNETES_\w+|"
    r"MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK|LOCAL_RANK|NODE_RANK|GROUP_RANK|NNODES|NPROC_PER_NODE|"
    r"CUDA_VISIBLE_DEVICES|HF_\w+|WANDB_\w+|AZUREML_\w+|AWS_\w+|SM_\w+|GITHUB_\w+|CI)$"
)
_VAR_USE = re.compile(r"\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-=?+])?")
_SET_FORMS = re.compile(
    r"(?:^|[\s;&|(])(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*|typeset\s+(?:-\w+\s+)*)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\+?="
)
_READ_FORMS = re.compile(r"\b(?:read(?:\s+-\w+)*|for|getopts\s+\S+|select)\s+(?P<names>[A-Za-z_][\w\s]*)")


@dataclass
class ShellFinds:
    """What the shell reader found, by kind (each a list of dicts with ``file`` and ``line``)."""

    crlf: list[dict[str, Any]] = field(default_factory=list)
    split: list[dict[str, Any]] = field(default_factory=list)
    unexported: list[dict[str, Any]] = field(default_factory=list)
    lora_comma: list[dict[str, Any]] = field(default_factory=list)
    unset: list[dict[str, Any]] = field(default_factory=list)
    shared_gpus: list[dict[str, Any]] = field(default_factory=list)
    full_memory: list[dict[str, Any]] = field(default_factory=list)
    blocking: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "crlf": self.crlf[:MAX_FOUND],
            "split": self.split[:MAX_FOUND],
            "unexported_env": self.unexported[:MAX_FOUND],
            "lora_comma": self.lora_comma[:MAX_FOUND],
            "unset": self.unset[:MAX_FOUND],
            "shared_gpus": self.shared_gpus[:MAX_FOUND],
            "full_memory": self.full_memory[:MAX_FOUND],
            "blocking_server": self.blocking[:MAX_FOUND],
        }


def _open_array(line: str) -> bool:
    """A line that opens a multi-line array or subshell (``ARGS=(``, ``$(``)."""
    code = line.split(" #", 1)[0].rstrip()
    return code.count("(") > code.count(")")


def split_commands(text: str, shown: str, readme: bool = False) -> list[dict[str, Any]]:
    """Launch commands bash ends before their options (see the module's ``split``)."""
    out: list[dict[str, Any]] = []
    lines = bash_lines(text)
    depth = 0
    for k, (number, line, last) in enumerate(lines):
        if depth:
            depth += line.count("(") - line.count(")")
            depth = max(depth, 0)
            continue
        if _open_array(line):
            depth = line.count("(") - line.count(")")
            continue
        if k + 1 >= len(lines) or line.lstrip().startswith("#"):
            continue
        nxt_number, nxt, _ = lines[k + 1]
        if not option_line(nxt):
            continue
        runs = line_runs(line)
        if not runs or not is_launch(runs[-1][1]) or {"--help", "-h"} & set(runs[-1][1]):
            continue
        escaped_space = re.search(r"\\[ \t]+(#.*)?$", last) is not None
        comment_cut = last.lstrip().startswith("#")  # a commented-out option line ends it
        run = runs[-1][1]
        out.append(
            {
                "file": shown,
                "line": number,
                "command": " ".join(w.strip() for w in run[:3] if w.strip())[:80],
                "next_line": nxt_number,
                "next": nxt.strip()[:60],
                "escaped_space": escaped_space,
                "comment_cut": comment_cut and not escaped_space,
                "readme": readme,
            }
        )
    return out


def unexported_env(text: str, shown: str) -> list[dict[str, Any]]:
    """Variables a launched process reads, set alone on a line and never exported before the
    next launch (see the module's ``unexported``)."""
    if "#SBATCH" in text or "#PBS" in text:
        return []  # a batch job's variables: the scheduler's environment is another story
    lines = bash_lines(text)
    everything = "\n".join(t for _, t, _ in lines)
    out: list[dict[str, Any]] = []
    pending: dict[str, tuple[int, str]] = {}
    exported: set[str] = set()
    for number, line, _ in lines:
        if _ALLEXPORT.match(line):
            return out
        m = EXPORT.match(line)
        if m:
            for word in m["rest"].split():
                name = word.split("=", 1)[0]
                exported.add(name)
                pending.pop(name, None)
            continue
        if not (_ASSIGN_START.match(line) or (pending and may_launch(line))):
            continue  # neither an assignment nor a launch: nothing to split into words
        for env, run in line_runs(line):
            if not run and len(env) == 1 and (a := _ASSIGN_ALONE.match(env[0])):
                name = a["name"]
                if (
                    _CHILD_ENV.match(name)
                    and name != "CUDA_VISIBLE_DEVICES"
                    and name not in exported
                    and not re.search(r"\$\{?" + name + r"\b", everything)
                ):
                    pending[name] = (number, a["value"])
                continue
            if run and run[0] == "unset":
                for name in run[1:]:
                    pending.pop(name, None)
                continue
            if not pending or not is_launch(run):
                continue
            given = {e.split("=", 1)[0] for e in env}
            names = [n for n in pending if n not in given]
            if names:
                out.append(
                    {
                        "file": shown,
                        "line": pending[names[0]][0],
                        "names": {n: {"line": pending[n][0], "value": pending[n][1][:80]} for n in names},
                        "command_line": number,
                        "command": " ".join(run[:3])[:80],
                    }
                )
            pending.clear()
    return out


def lora_commas(text: str, shown: str) -> list[dict[str, Any]]:
    """``--lora_target_modules "q_proj", "v_proj"``: list words that keep their comma."""
    out: list[dict[str, Any]] = []
    for number, line, _ in bash_lines(text):
        if "target" not in line or "," not in line:
            continue
        for _, run in line_runs(line):
            for i, w in enumerate(run):
                if not _LIST_OPTIONS.match(w):
                    continue
                values = []
                for v in run[i + 1 :]:
                    if v.startswith("-"):
                        break
                    values.append(v)
                bad = [v for v in values if v.endswith(",")]
                if bad and len(values) > 1:
                    out.append(
                        {"file": shown, "line": number, "option": w, "values": values[:8], "bad": bad[:8]}
                    )
    return out


def _assigned(text: str) -> set[str]:
    names = {m["name"] for m in _SET_FORMS.finditer(text)}
    for m in _READ_FORMS.finditer(text):
        names.update(m["names"].split())
    return names


def unset_variables(text: str, shown: str, elsewhere: Callable[[str], bool]) -> list[dict[str, Any]]:
    """``$NAME`` in a required argument of a launch that nothing sets (the module's ``unset``);
    ``elsewhere(name)``: whether another file the hook read names it (a README that says to
    export it)."""
    if "$" not in text or "#SBATCH" in text or "#PBS" in text or "#BSUB" in text:
        return []
    lines = bash_lines(text)
    if any(_SOURCE.match(t) or _SETS_UNKNOWN.search(t) for _, t, _ in lines):
        return []  # the variables may come from the sourced file
    assigned = _assigned("\n".join(t for _, t, _ in lines))
    out: list[dict[str, Any]] = []
    for number, line, _ in lines:
        if "$" not in line or not may_launch(line):
            continue
        for _, run in line_runs(line):
            if not is_launch(run):
                continue
            script_at = next((i for i, w in enumerate(run) if w.endswith(".py")), None)
            for i, w in enumerate(run):
                required = (i == script_at) or (i > 0 and run[i - 1] in _REQUIRED)
                if not required or "$" not in w:
                    continue
                for m in _VAR_USE.finditer(w):
                    name = m["name"]
                    if m["op"] or _PROVIDED.match(name) or name in assigned:
                        continue
                    if elsewhere(name):
                        continue  # the README or another file names it: the user is told to set it
                    out.append(
                        {
                            "file": shown,
                            "line": number,
                            "name": name,
                            "option": run[i - 1] if i != script_at else "(the script)",
                            "word": w[:120],
                            "command": " ".join(run[:3])[:80],
                        }
                    )
    return out


def _index_eol(root: Path, shown: str) -> str | None:
    """``lf`` / ``crlf`` of the committed copy of a file (git's index), None when unknown."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, a path of the repository
            ["git", "ls-files", "--eol", "--", shown],  # noqa: S607
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"^i/(\S+)", done.stdout.strip())
    return m.group(1) if m else None


def crlf_script(data: bytes, text: str, shown: str, root: Path) -> dict[str, Any] | None:
    """A launch script with ``\\r\\n`` line ends on a line bash runs (the module's ``crlf``)."""
    if b"\r\n" not in data:
        return None
    lf = text.replace("\r\n", "\n")
    launches = [n for n, line, _ in bash_lines(lf) for _, run in line_runs(line) if is_launch(run)]
    if not launches:
        return None
    raw = text.split("\n")
    first = next(
        (
            i + 1
            for i, line in enumerate(raw)
            if line.endswith("\r")
            and line.strip()
            and not line.lstrip().startswith("#!")
            and not line.lstrip().startswith("#")
        ),
        None,
    )
    if first is None:
        return None
    if _index_eol(root, shown) == "lf":
        return None  # the commit holds LF ends; this checkout converted them (core.autocrlf)
    return {
        "file": shown,
        "line": first,
        "lines": sum(1 for line in raw if line.endswith("\r")),
        "launch_line": launches[0],
    }


def _named(texts: dict[str, str], name: str, but: str) -> bool:
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    return any(word.search(t) for s, t in texts.items() if s != but)


def repo_shell(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The shell reader's findings for the repository at ``root`` (see the module docstring)."""
    found = ShellFinds()
    scripts = walk(
        root,
        SCRIPT_PATTERNS,
        max_files=MAX_SCRIPTS,
        max_depth=MAX_DEPTH,
        skip_dirs=_SKIP_DIRS,
        skip_hidden_dirs=True,
    )
    readmes = walk(
        root, README_PATTERNS, max_files=20, max_depth=2, skip_dirs=_SKIP_DIRS, skip_hidden_dirs=True
    )
    texts: dict[str, str] = {}
    raw: dict[str, bytes] = {}
    starts: list[_Start] = []
    for path in [*scripts, *readmes]:
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        shown = path.relative_to(root).as_posix()
        raw[shown] = data
        texts[shown] = data.decode("utf-8", errors="replace")
    for shown, text in texts.items():
        lf = text.replace("\r\n", "\n")
        if is_vendored(shown):
            continue  # copies of other projects' examples run in those projects' trees
        if not shown.lower().endswith(".md"):
            hit = crlf_script(raw[shown], text, shown, root)
            if hit:
                found.crlf.append(hit)
            found.split += split_commands(lf, shown)
            found.unexported += unexported_env(lf, shown)
            found.lora_comma += lora_commas(lf, shown)
            found.unset += unset_variables(lf, shown, functools.partial(_named, texts, but=shown))
            starts += gpu_starts(lf, shown)
        else:
            block = readme_blocks(lf)
            found.split += split_commands(block, shown, readme=True)
            found.lora_comma += lora_commas(block, shown)
    found.shared_gpus, found.full_memory = shared_gpus(starts)
    found.blocking = blocking_servers(starts, texts)
    return found.to_dict()


def is_vendored(shown: str) -> bool:
    """Whether a file sits in a folder of copies of other projects (their scripts run there)."""
    from envdoctor.plan.repo_paths import _VENDORED

    return bool(_VENDORED & set(PurePosixPath(shown).parts[:-1]))
