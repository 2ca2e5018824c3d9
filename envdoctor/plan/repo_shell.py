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

Bounded: at most ``MAX_SCRIPTS`` scripts of ``MAX_BYTES`` each, ``MAX_FOUND`` items per kind.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from envdoctor.plan.readme_blocks import continues, readme_blocks
from envdoctor.plan.repo_paths import _commands, _strip_prefix
from envdoctor.plan.repo_walk import walk

SCRIPT_PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
README_PATTERNS = ("README*.md", "readme*.md", "Readme*.md")
MAX_SCRIPTS = 200
MAX_BYTES = 512 * 1024
MAX_DEPTH = 6
MAX_FOUND = 50
MAX_STARTS = 200  # servers and training launches compared pairwise
MAX_LINE = 8_000  # a logical line longer than this is data (a quoted block), not a launch
MAX_QUOTED = 200  # lines a quoted string may span
_SKIP_DIRS = frozenset(
    {".git", "node_modules", "site-packages", "dist-packages", "__pycache__", "venv", ".venv", "wandb"}
)
#: programs that start a training or generation process (what a launch script is for)
_LAUNCHERS = re.compile(
    r"^(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed|trl|vllm|swift|llamafactory-cli|"
    r"lighteval|srun|mpirun|ray|.*\.py)$"
)
#: environment variables a launched process reads: set without export, it never sees them
_CHILD_ENV = re.compile(
    r"^(?:NCCL_\w+|CUDA_\w+|PYTORCH_\w+|TORCH_\w+|TORCHINDUCTOR_\w+|VLLM_\w+|HF_\w+|HUGGINGFACE_\w+|"
    r"TRANSFORMERS_\w+|TOKENIZERS_PARALLELISM|ACCELERATE_\w+|WANDB_\w+|OMP_NUM_THREADS|MKL_\w+|"
    r"TRITON_\w+|DS_\w+|DEEPSPEED_\w+|NVIDIA_\w+|XFORMERS_\w+|FLASH_ATTENTION_\w+|"
    r"MASTER_ADDR|MASTER_PORT|GLOO_\w+|UCX_\w+|FI_\w+|TRL_\w+)$"
)
_ASSIGN_ALONE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_EXPORT = re.compile(
    r"^\s*(?:export|declare\s+-[a-zA-Z]*x[a-zA-Z]*|typeset\s+-[a-zA-Z]*x[a-zA-Z]*)\s+(?P<rest>.*)$"
)
_ALLEXPORT = re.compile(r"^\s*set\s+(?:-[a-zA-Z]*a[a-zA-Z]*|-o\s+allexport)\b")
#: lines that set variables whose names the script does not write (``export $(cat .env | xargs)``)
_SETS_UNKNOWN = re.compile(r"\beval\s|\b(?:export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*[\"']?\$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+\S")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(?P<tag>[A-Za-z_][A-Za-z0-9_]*)['\"]?")
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

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "crlf": self.crlf[:MAX_FOUND],
            "split": self.split[:MAX_FOUND],
            "unexported_env": self.unexported[:MAX_FOUND],
            "lora_comma": self.lora_comma[:MAX_FOUND],
            "unset": self.unset[:MAX_FOUND],
            "shared_gpus": self.shared_gpus[:MAX_FOUND],
            "full_memory": self.full_memory[:MAX_FOUND],
        }


_QUOTING = re.compile(r"""\\.|'[^']*'|"(?:[^"\\]|\\.)*"|(?:^|(?<=\s))#.*|['"]""", re.S)


def _open_quote(line: str) -> bool:
    """Whether a line leaves a quote open (bash reads on to the line that closes it); a ``#``
    at a word's start outside quotes starts a comment."""
    if "'" not in line and '"' not in line:
        return False
    for m in _QUOTING.finditer(line):
        token = m.group(0)
        if token in ("'", '"'):
            return True
        if token.startswith("#"):
            return False
    return False


@functools.lru_cache(maxsize=256)
def bash_lines(text: str) -> list[tuple[int, str, str]]:
    """(first line, the logical line as bash reads it, the last physical line's text) of a
    script whose line ends are ``\\n``: ``\\``-newline pairs removed, heredoc bodies left out."""
    raw = text.split("\n")
    out: list[tuple[int, str, str]] = []
    i = 0
    while i < len(raw):
        start = i
        parts = [raw[i]]
        while continues(parts[-1]) and i + 1 < len(raw):
            parts[-1] = parts[-1][:-1]
            i += 1
            parts.append(raw[i])
        i += 1
        joined = "".join(parts)
        extra = 0
        while _open_quote(joined) and i < len(raw) and extra < MAX_QUOTED:
            joined += "\n" + raw[i]  # a quoted string runs on to the line that closes it
            i += 1
            extra += 1
        out.append((start + 1, joined, raw[i - 1]))
        m = _HEREDOC.search(joined) if "<<" in joined and not joined.lstrip().startswith("#") else None
        if m is not None:  # skip the heredoc's body up to its tag
            tag = m["tag"]
            while i < len(raw) and raw[i].strip() != tag:
                i += 1
            i += 1
    return out


_WORD = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+|['"].*|\\\Z""", re.S)
_WHOLE = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""", re.S)
_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""", re.S)
_IN_DOUBLE = re.compile(r"""\\(["\\])""")  # as shlex: only a quote or a backslash is escaped


def _unquote(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    if m.group(2) is not None:
        return _IN_DOUBLE.sub(r"\1", m.group(2))
    return m.group(3)


def split_words(line: str) -> list[str] | None:
    """The words of a shell line as ``shlex.split(line, comments=True)`` gives them (quotes
    removed, a comment from a word starting with ``#``), None on an unclosed quote; by regular
    expressions, an order of magnitude faster than shlex's scan."""
    if not any(c in line for c in "'\"\\#"):
        return line.split()
    out: list[str] = []
    for m in _WORD.finditer(line):
        word = m.group(0)
        if word.startswith("#"):
            break
        if (word.startswith(("'", '"')) and not _closed(word)) or word == "\\":
            return None  # an unclosed quote, a backslash with nothing to escape
        out.append(_QUOTED.sub(_unquote, word) if any(c in word for c in "'\"\\") else word)
    return out


def _closed(word: str) -> bool:
    """Whether every quote a word opens is closed (the word matched as a whole)."""
    return _WHOLE.fullmatch(word) is not None


@functools.lru_cache(maxsize=8192)
def _runs(line: str) -> list[tuple[list[str], list[str]]]:
    """(environment prefix, command words) of each simple command of a logical line."""
    if len(line) > MAX_LINE:
        return []
    words = split_words(line)
    if not words:
        return []
    return [_strip_prefix(c) for c in _commands(words)]


_LAUNCH_WORD = re.compile(
    r"\b(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed|trl|vllm|swift|llamafactory-cli|lighteval|"
    r"srun|mpirun|ray|unset|source)\b|\.py\b|^\s*\.\s"
)
_ASSIGN_START = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=")


def may_launch(line: str) -> bool:
    """Whether a line may run a launch (a cheap test before splitting it into words)."""
    return _LAUNCH_WORD.search(line) is not None


def _is_launch(run: list[str]) -> bool:
    if not run:
        return False
    prog = os.path.basename(run[0])
    if not _LAUNCHERS.match(prog):
        return False
    if prog.startswith("python"):
        return any(w.endswith(".py") or w == "-m" for w in run[1:4])
    if prog == "accelerate":
        return run[1:2] == ["launch"]
    if prog == "trl":
        return len(run) > 1 and not run[1].startswith("-")
    if prog == "vllm":
        return run[1:2] == ["serve"]
    return True


def _option_line(line: str) -> bool:
    """A line bash would run as a command named like an option (``--port 8000``)."""
    s = line.strip()
    return bool(re.match(r"^--?[A-Za-z][\w.-]*(?:[= ]|$)", s)) and not re.match(r"^--?[\w.-]+\)", s)


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
        if not _option_line(nxt):
            continue
        runs = _runs(line)
        if not runs or not _is_launch(runs[-1][1]) or {"--help", "-h"} & set(runs[-1][1]):
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
        m = _EXPORT.match(line)
        if m:
            for word in m["rest"].split():
                name = word.split("=", 1)[0]
                exported.add(name)
                pending.pop(name, None)
            continue
        if not (_ASSIGN_START.match(line) or (pending and may_launch(line))):
            continue  # neither an assignment nor a launch: nothing to split into words
        for env, run in _runs(line):
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
            if not pending or not _is_launch(run):
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
        for _, run in _runs(line):
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
        for _, run in _runs(line):
            if not _is_launch(run):
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
    launches = [n for n, line, _ in bash_lines(lf) for _, run in _runs(line) if _is_launch(run)]
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
    return found.to_dict()


def is_vendored(shown: str) -> bool:
    """Whether a file sits in a folder of copies of other projects (their scripts run there)."""
    from envdoctor.plan.repo_paths import _VENDORED

    return bool(_VENDORED & set(PurePosixPath(shown).parts[:-1]))


@dataclass(frozen=True)
class _Start:
    """A process a launch script starts on GPUs: a vLLM server or a training launch."""

    file: str
    line: int
    kind: str  # "server" or "trainer"
    command: str
    gpus: tuple[int, ...] | None  # CUDA_VISIBLE_DEVICES as written (None: not set or not literal)
    port: str = "8000"
    util: float = 0.9
    background: bool = False


#: a training launch that needs no vLLM server (vLLM in its own processes, or no vLLM)
_NO_SERVER = re.compile(r"(?i)colocate|--use_vllm[= ](?:false|0)\b")
_GPU_LIST = re.compile(r"^\d+(?:,\d+)*$")


def _server(run: list[str]) -> bool:
    prog = os.path.basename(run[0]) if run else ""
    if prog == "trl":
        return run[1:2] == ["vllm-serve"]
    if prog == "vllm":
        return run[1:2] == ["serve"]
    if prog.startswith("python") and "-m" in run[1:3]:
        mod = run[run.index("-m") + 1] if run.index("-m") + 1 < len(run) else ""
        return mod in ("vllm.entrypoints.openai.api_server", "trl.scripts.vllm_serve")
    return False


def _value(run: list[str], *names: str) -> str | None:
    for i, w in enumerate(run):
        for name in names:
            if w == name and i + 1 < len(run):
                return run[i + 1]
            if w.startswith(name + "="):
                return w.split("=", 1)[1]
    return None


def _intended(lines: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    """The logical lines as their author meant them: option lines that a missing ``\\`` cut
    off a launch (``split``, said by REP005) joined back to it."""
    out: list[tuple[int, str]] = []
    for number, line, _ in lines:
        if out and _option_line(line) and (runs := _runs(out[-1][1])) and _is_launch(runs[-1][1]):
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
            continue
        out.append((number, line))
    return out


def _size(run: list[str]) -> int:
    """The GPUs a server line asks for: tensor × data parallel size (1 each by default)."""
    size = 1
    for names in (
        ("--tensor-parallel-size", "--tensor_parallel_size", "-tp"),
        ("--data-parallel-size", "-dp"),
    ):
        value = _value(run, *names)
        size *= int(value) if value and value.isdigit() and 0 < int(value) <= 64 else 1
    return size


def gpu_starts(text: str, shown: str) -> list[_Start]:
    """The vLLM servers and training launches of a script, with the GPUs each is given."""
    out: list[_Start] = []
    exported: str | None = None
    for number, line in _intended(bash_lines(text)):
        m = _EXPORT.match(line)
        if m:
            for word in m["rest"].split():
                if word.startswith("CUDA_VISIBLE_DEVICES="):
                    exported = word.split("=", 1)[1].strip("\"'")
            continue
        if not may_launch(line):
            continue
        background = bool(re.search(r"(?<!&)&\s*(?:#.*)?$", line))
        for env, run in _runs(line):
            if not run or not (_server(run) or _is_launch(run)):
                continue
            given = next((e.split("=", 1)[1] for e in env if e.startswith("CUDA_VISIBLE_DEVICES=")), exported)
            gpus = tuple(int(g) for g in given.split(",")) if given and _GPU_LIST.match(given) else None
            if _server(run):
                util = _value(run, "--gpu-memory-utilization", "--gpu_memory_utilization") or "0.9"
                try:
                    fraction = float(util)
                except ValueError:
                    fraction = 0.9
                port = _value(run, "--port") or "8000"
                if gpus is None and given is None:  # every GPU visible: vLLM takes the first ones
                    gpus = tuple(range(_size(run)))
                out.append(
                    _Start(shown, number, "server", " ".join(run[:2]), gpus, port, fraction, background)
                )
            elif (
                os.path.basename(run[0]) in ("accelerate", "torchrun", "deepspeed")
                or run[0].startswith("python")
            ) and not _NO_SERVER.search(" ".join(run)):
                out.append(_Start(shown, number, "trainer", " ".join(run[:2]), gpus, background=background))
    return out


def shared_gpus(starts: list[_Start]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(GPUs two starts of one run share, servers that ask for all of their GPUs' memory).

    One run: the starts of one script, or of the scripts of one folder (a server script beside
    its training script). Two servers on one port are alternatives, not one run; a training
    launch shares a server's GPU only when both name their GPUs."""
    shared: list[dict[str, Any]] = []
    full = [
        {"file": s.file, "line": s.line, "command": s.command, "util": s.util}
        for s in starts
        if s.kind == "server" and s.util >= 0.99
    ]
    by_folder: dict[str, list[_Start]] = {}
    for s in [s for s in starts if s.gpus is not None][:MAX_STARTS]:  # no GPU list: nothing to share
        by_folder.setdefault(str(PurePosixPath(s.file).parent), []).append(s)
    for group in by_folder.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if len(shared) >= MAX_FOUND:
                    break
                if a.gpus is None or b.gpus is None or not set(a.gpus) & set(b.gpus):
                    continue
                if a.kind == "trainer" and b.kind == "trainer":
                    continue  # two training launches: alternatives
                if a.kind == b.kind == "server" and a.port == b.port:
                    continue  # one port: the same server written twice, one or the other runs
                first, second = (a, b) if a.kind == "server" else (b, a)
                together = first.file == second.file and first.background and first.line < second.line
                if first.file == second.file and not together:
                    continue  # one after the other in one script: the first has ended
                shared.append(
                    {
                        "file": second.file,
                        "line": second.line,
                        "gpus": sorted(set(a.gpus) & set(b.gpus)),
                        "first": {
                            "file": first.file,
                            "line": first.line,
                            "command": first.command,
                            "kind": first.kind,
                            "util": first.util,
                            "port": first.port,
                        },
                        "second": {
                            "file": second.file,
                            "line": second.line,
                            "command": second.command,
                            "kind": second.kind,
                            "util": second.util,
                            "port": second.port,
                        },
                        "same_script": together,
                        # the training process that joins vLLM's weight-sync group (rank 0, on
                        # the first GPU it sees) on a server GPU: NCCL's duplicate-GPU refusal
                        "rank0_shared": second.kind == "trainer"
                        and (second.gpus or (-1,))[0] in (first.gpus or ()),
                    }
                )
    return shared[:MAX_FOUND], full[:MAX_FOUND]
