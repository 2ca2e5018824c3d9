"""What a repository's launch scripts and configs name that will not be there at launch, and GPU
restrictions its shell scripts set where the launched process cannot see them (the hook).

- ``missing_paths``: a launch script (``*.sh``, ``*.bash``, ``*.slurm``, ``*.sbatch``) that runs a
  training script (``python x.py``, ``accelerate launch``, ``torchrun``, ``deepspeed``) naming a
  ``.py`` script, an accelerate / GRPO config (``--config_file``, ``--config``) or a DeepSpeed JSON
  (``--deepspeed``) that is not in the repository; an accelerate config whose
  ``deepspeed_config.deepspeed_config_file``, or a GRPO config whose ``deepspeed:``, names a JSON
  that is not in the repository.
- ``unexported_devices``: ``CUDA_VISIBLE_DEVICES=…`` alone on a line of a shell script, never
  exported: a shell variable only, which the commands the script then runs do not see.

A path is looked up from every folder the script may run in: the repository root, the script's
own folder and those between, and the folder a literal ``cd`` goes to. Words with shell
variables, globs, ``~`` or templates, absolute paths and paths outside the repository are not
judged. When the script ``cd``s somewhere envdoctor cannot follow, or makes files as it runs
(``git clone``, ``wget``, a redirection naming the file), a missing path is said with less
certainty (``certainty``: ``certain``, ``likely``, ``unknown``). Nothing is run; the walk is
bounded in files, bytes and depth.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from envdoctor.plan.cd import cd_target, literal_path
from envdoctor.plan.repo_launches import logical_lines
from envdoctor.plan.repo_walk import walk

SCRIPT_PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
CONFIG_PATTERNS = ("*.yaml", "*.yml")
MAX_SCRIPTS = 200
MAX_CONFIGS = 400
MAX_BYTES = 512 * 1024
MAX_DEPTH = 6
MAX_INDEX = 50_000  # files of the repository indexed for the lookup
MAX_FOUND = 50
_SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        "site-packages",
        "dist-packages",
        "__pycache__",
        "venv",
        ".venv",
        ".tox",
        "wandb",
    }
)
#: the programs whose script, config and DeepSpeed arguments are judged
_RUNNER = re.compile(
    r"^(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed)$",
)
#: commands that make files while the script runs: a missing path may be one of them
_MAKES_FILES = re.compile(
    r"\b(?:git\s+clone|wget|curl|huggingface-cli\s+download|hf\s+download|tar\s|unzip|gsutil|aws\s+s3|rsync|scp)\b"
)
_CD_SCRIPT_DIR = re.compile(
    r"""^["']?(?:\$\(\s*dirname\s+["']?(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)["']?\s*\)|\$\{0%/\*\})"""
    r"""(?P<rest>/[^"'\s]*)?["']?$"""
)
_ASSIGN = re.compile(r"^CUDA_VISIBLE_DEVICES=(?P<value>\S*)$")
_EXPORTS = re.compile(
    r"^\s*(?:export|declare\s+-[a-zA-Z]*x[a-zA-Z]*|typeset\s+-[a-zA-Z]*x[a-zA-Z]*)\b[^#\n]*\bCUDA_VISIBLE_DEVICES\b"
)
_ALLEXPORT = re.compile(r"^\s*set\s+(?:-[a-zA-Z]*a[a-zA-Z]*|-o\s+allexport)\b")
#: words that start a process the GPU restriction is meant for
_GPU_COMMAND = re.compile(
    r"^(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed|trl|vllm|swift|llamafactory-cli|srun|nohup|"
    r"bash|sh|ray|lighteval|.*\.py|.*\.sh)$"
)
#: keys no other trainer's config has (envdoctor.commands.hook_repo.GRPO_ONLY): a config with
#: one is a GRPOConfig whose ``deepspeed`` TrainingArguments reads (axolotl's is its own)
_GRPO_ONLY = frozenset(
    {"num_generations", "reward_funcs", "use_vllm", "vllm_mode", "vllm_device", "num_iterations", "epsilon"}
)
#: a line worth splitting into words for the path check (shlex is slow: most lines are not)
_MAY_LAUNCH = re.compile(r"\b(?:python|accelerate|torchrun|deepspeed|cd|pushd|popd)\b")
#: a command line longer than this is data, not a launch line
MAX_LINE = 20_000
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: folders of copies of other projects (their launch scripts run in those projects' trees)
_VENDORED = frozenset(
    {
        "examples",
        "example",
        "third_party",
        "thirdparty",
        "3rdparty",
        "vendor",
        "external",
        "deps",
        "submodules",
    }
)
#: a plain ``python x.py`` line is a training launch when it or its file says so
_TRAINING = re.compile(r"(?i)train|grpo|rlhf|--deepspeed|--config")


@dataclass(frozen=True)
class MissingPath:
    """A path a launch script or a config names that the repository does not hold."""

    file: str  # where it is named
    line: int
    kind: str  # "script", "config", "accelerate config", "deepspeed config"
    written: str  # as written
    option: str  # "--config_file", "deepspeed_config_file", "(the script)" …
    certainty: str  # "certain", "likely" (the script cds where envdoctor cannot follow), "unknown"
    why: str = ""  # what makes it less than certain
    near: str = ""  # a file of the same name the repository does hold

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class UnexportedDevices:
    """``CUDA_VISIBLE_DEVICES=…`` alone on a line, and the first command after it that runs."""

    file: str
    line: int
    value: str
    command_line: int
    command: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Index:
    """The repository's files and folders (relative POSIX paths), bounded."""

    def __init__(self, root: Path) -> None:
        self.files: set[str] = set()
        self.dirs: set[str] = {""}
        self.by_name: dict[str, list[str]] = {}
        self.complete = True
        for folder, dirs, files in os.walk(root, followlinks=False):
            rel = os.path.relpath(folder, root)
            rel = "" if rel == "." else rel.replace(os.sep, "/")
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for d in dirs:
                self.dirs.add(f"{rel}/{d}" if rel else d)
            for name in files:
                path = f"{rel}/{name}" if rel else name
                self.files.add(path)
                self.by_name.setdefault(name, []).append(path)
            if len(self.files) > MAX_INDEX:
                self.complete = False
                break

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def ends_with(self, written: str) -> bool:
        """Whether some file of the repository is ``written`` from some folder."""
        parts = PurePosixPath(written).parts
        return any(PurePosixPath(p).parts[-len(parts) :] == parts for p in self.by_name.get(parts[-1], []))


def _norm(base: str, written: str) -> str | None:
    """``written`` from the folder ``base`` (repository-relative), or None outside the repository."""
    joined = os.path.normpath(os.path.join(base or ".", written)).replace(os.sep, "/")
    if joined == ".":
        return ""
    if joined.startswith("../") or joined == "..":
        return None
    return joined


_judged = literal_path  # a written path envdoctor can look up (no variable, glob, template…)


def _words(command: str) -> list[str] | None:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return None


def _commands(words: list[str]) -> list[list[str]]:
    """The simple commands of one line (split at ``;``, ``&&``, ``||``, ``|``)."""
    out: list[list[str]] = [[]]
    for w in words:
        if w in (";", "&&", "||", "|", "&"):
            out.append([])
        elif w.endswith(";") and len(w) > 1:
            out[-1].append(w[:-1])
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c]


def _strip_prefix(cmd: list[str]) -> tuple[list[str], list[str]]:
    """(environment assignments, the command) of a simple command: ``A=1 env B=2 nohup x`` ->
    (["A=1", "B=2"], ["x"])."""
    env: list[str] = []
    i = 0
    while i < len(cmd):
        w = cmd[i]
        if _ENV_WORD.match(w):
            env.append(w)
        elif w in ("env", "nohup", "time", "exec", "command", "stdbuf"):
            pass
        else:
            break
        i += 1
    return env, cmd[i:]


def _option(words: list[str], *names: str) -> tuple[str, str] | None:
    for i, w in enumerate(words):
        for name in names:
            if w == name and i + 1 < len(words):
                return name, words[i + 1]
            if w.startswith(name + "="):
                return name, w.split("=", 1)[1]
    return None


def _named_paths(run: list[str]) -> list[tuple[str, str, str]]:
    """(kind, option, written) of the paths one launching command names."""
    prog = os.path.basename(run[0])
    rest = run[1:]
    if prog == "accelerate":
        if not rest or rest[0] != "launch":
            return []
        rest = rest[1:]
    if prog.startswith("python") and rest[:1] == ["-m"]:
        if len(rest) < 2 or rest[1] not in ("torch.distributed.run", "torch.distributed.launch"):
            return []
        rest = rest[2:]
    elif prog.startswith("python") and any(w in ("-c", "-m") for w in rest[:3]):
        return []
    at = next((i for i, w in enumerate(rest) if w.endswith(".py") and not w.startswith("-")), None)
    if at is None:
        return []
    before, script, after = rest[:at], rest[at], rest[at + 1 :]
    out = [("script", "(the script)", script)]
    acc = _option(before, "--config_file", "--config-file")
    if prog == "accelerate" and acc:
        out.append(("accelerate config", acc[0], acc[1]))
    cfg = _option(after, "--config", "--config_file", "--config-file")
    if cfg and cfg[1].endswith((".yaml", ".yml")):
        out.append(("config", cfg[0], cfg[1]))
    ds = _option(after, "--deepspeed", "--deepspeed_config", "--deepspeed_config_file")
    if ds and ds[1].endswith(".json"):
        out.append(("deepspeed config", ds[0], ds[1]))
    ds = _option(before, "--deepspeed_config_file")
    if ds and ds[1].endswith(".json"):
        out.append(("deepspeed config", ds[0], ds[1]))
    return out


class _Cwd:
    """The folders a script may be running in at a line: None once it ``cd``s where envdoctor
    cannot follow."""

    def __init__(self, here: str) -> None:
        parts = PurePosixPath(here).parts if here else ()
        self.folders: set[str] | None = {"/".join(parts[:n]) for n in range(len(parts) + 1)}
        self.here = here
        self.lost = ""  # the cd that lost it
        self.moved = False  # a literal cd set the folder: the script says where it runs

    def cd(self, target: str | None, index: _Index) -> None:
        if self.folders is None:
            return
        if target is None or target in ("-", "~"):
            self.folders, self.lost = None, f"cd {target or ''}".strip()
            return
        m = _CD_SCRIPT_DIR.match(target)
        if m is not None:
            base = _norm(self.here, (m["rest"] or "/.")[1:] or ".")
            self.folders = {base} if base is not None and base in index.dirs else None
            self.lost = "" if self.folders else f"cd {target}"
            self.moved = bool(self.folders)
            return
        went = [cd_target(f, target) for f in self.folders]
        if any(n is None for n in went):  # not a folder envdoctor can follow
            self.folders, self.lost = None, f"cd {target}"
            return
        found = {n for n in went if n is not None and n in index.dirs}  # never above the root
        self.folders = found or None
        self.moved = bool(found)
        self.lost = "" if found else f"cd {target}"


def _script_findings(text: str, shown: str, index: _Index) -> list[MissingPath]:
    here = str(PurePosixPath(shown).parent)
    here = "" if here == "." else here
    cwd = _Cwd(here)
    lines = logical_lines(text)
    makes = _MAKES_FILES.search(text)
    out: list[MissingPath] = []
    for number, line in lines:
        if len(out) >= MAX_FOUND:
            break  # a hostile script: enough said
        if len(line) > MAX_LINE or not _MAY_LAUNCH.search(line):
            continue
        words = _words(line)
        if not words:
            continue
        for cmd in _commands(words):
            _, run = _strip_prefix(cmd)
            if not run:
                continue
            if run[0] in ("cd", "pushd"):
                cwd.cd(run[1] if len(run) > 1 else None, index)
                continue
            if run[0] == "popd":
                cwd.folders, cwd.lost = None, "popd"
                continue
            if not _RUNNER.match(os.path.basename(run[0])):
                continue
            if os.path.basename(run[0]).startswith("python") and not (
                _TRAINING.search(shown) or _TRAINING.search(line)
            ):
                continue  # a plain python line of a script that is not about training
            named = [(k, o, w) for k, o, w in _named_paths(run) if _judged(w)]
            folders = cwd.folders
            anchored = False
            if folders is None:  # cd'd away: the script's own paths say where it runs
                anchored = any(index.exists(w.removeprefix("./")) for _, _, w in named)
            for kind, option, written in named:
                look = folders if folders is not None else {""}
                where = [_norm(f, written) for f in look]
                if any(p is not None and index.exists(p) for p in where):
                    continue
                if all(p is None for p in where):
                    continue  # outside the repository
                if folders is None and (not anchored or index.ends_with(written)):
                    if index.ends_with(written):
                        continue  # there from some folder the script may run in
                    certainty, why = "unknown", f"the script runs `{cwd.lost}` first"
                elif folders is None:
                    certainty, why = "likely", f"after `{cwd.lost}`, read as a checkout of this repository"
                elif not cwd.moved and index.ends_with(written):  # run from that folder?
                    certainty, why = "unknown", "the repository holds it from another folder"
                else:
                    certainty, why = "certain", ""
                base = PurePosixPath(written).name
                other = next((ln for ln, t in lines if ln != number and _other_use(t, base)), None)
                if certainty == "certain" and (makes or other):
                    certainty = "unknown"
                    said = f"`{makes.group(0)}`" if makes else f"line {other}"
                    why = f"the script may make it as it runs ({said})"
                near = _nearest(
                    written, index.by_name.get(base, []) or index.by_name.get(_undoubled(base), [])
                )
                out.append(MissingPath(shown, number, kind, written, option, certainty, why, near))
    return out


def _nearest(written: str, candidates: list[str]) -> str:
    """The candidate path most like ``written`` (a moved or renamed file), or ''."""
    import difflib

    return max(
        sorted(candidates), key=lambda c: difflib.SequenceMatcher(None, written, c).ratio(), default=""
    )


def _undoubled(name: str) -> str:
    """``x.yaml.yaml`` -> ``x.yaml`` (a suffix written twice), else ``name``."""
    suffix = PurePosixPath(name).suffix
    return name[: -len(suffix)] if suffix and name.endswith(suffix * 2) else name


def _other_use(line: str, name: str) -> bool:
    """Whether a line other than the launch names ``name`` as something else than a launch
    (``cp``, a redirection, a generator): not a comment, not another launch."""
    if name not in line or line.lstrip().startswith("#"):
        return False
    words = _words(line) or []
    runs = [_strip_prefix(c)[1] for c in _commands(words)]
    if re.search(r">\s*\S*" + re.escape(name), line):
        return True  # written by a redirection
    return not any(r and _RUNNER.match(os.path.basename(r[0])) for r in runs) and name in " ".join(words)


def unexported_devices(text: str, shown: str) -> list[UnexportedDevices]:
    """``CUDA_VISIBLE_DEVICES=…`` alone on a line, not exported before the next command that
    starts a process (nor by ``set -a``), and that command not given it otherwise."""
    if "CUDA_VISIBLE_DEVICES" not in text or "#SBATCH" in text or "#PBS" in text:
        return []  # a batch job's environment exports CUDA_VISIBLE_DEVICES already
    out: list[UnexportedDevices] = []
    exported = False
    pending: tuple[int, str] | None = None
    for number, line in logical_lines(text):
        if _ALLEXPORT.match(line) or _EXPORTS.match(line):
            exported, pending = True, None
            continue
        if len(line) > MAX_LINE or (pending is None and "CUDA_VISIBLE_DEVICES" not in line):
            continue
        words = _words(line)
        if not words:
            continue
        for cmd in _commands(words):
            if len(cmd) == 1 and (m := _ASSIGN.match(cmd[0])):
                if not exported:
                    pending = (number, m["value"])
                continue
            env, run = _strip_prefix(cmd)
            if pending is None or not run:
                continue
            if run[0] == "unset" and "CUDA_VISIBLE_DEVICES" in run:
                pending = None
                continue
            if not _GPU_COMMAND.match(os.path.basename(run[0])):
                continue
            if any(e.startswith("CUDA_VISIBLE_DEVICES=") for e in env) or "CUDA_VISIBLE_DEVICES" in " ".join(
                run
            ):
                pending = None  # given to this command (or passed on by name)
                continue
            out.append(UnexportedDevices(shown, pending[0], pending[1], number, " ".join(run[:3])[:80]))
            pending = None
    return out


def _config_findings(path: Path, shown: str, index: _Index) -> list[MissingPath]:
    """An accelerate config's ``deepspeed_config_file`` / a GRPO config's ``deepspeed`` JSON."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if "deepspeed" not in text:
        return []
    from envdoctor.errors import InputError
    from envdoctor.parsing import read_mapping

    try:
        data = read_mapping(str(path), shown)
    except (InputError, OSError, ValueError):
        return []
    found: list[tuple[str, str]] = []
    ds = data.get("deepspeed_config")
    if isinstance(ds, dict) and isinstance(ds.get("deepspeed_config_file"), str):
        found.append(("deepspeed_config_file", ds["deepspeed_config_file"]))
    from envdoctor.plan.config_files import kind_of

    kind = kind_of(data)
    if kind != "accelerate":
        found = []  # deepspeed_config_file is an accelerate config's key
    if kind == "grpo" and set(data) & _GRPO_ONLY and isinstance(data.get("deepspeed"), str):
        found.append(("deepspeed", data["deepspeed"]))  # TrainingArguments' (not axolotl's…)
    out: list[MissingPath] = []
    here = str(PurePosixPath(shown).parent)
    here = "" if here == "." else here
    for key, written in found:
        written = written.strip()
        if not written.endswith(".json") or not _judged(written):
            continue
        where = [_norm(f, written) for f in {"", here}]
        if any(p is not None and index.exists(p) for p in where) or all(p is None for p in where):
            continue
        if index.ends_with(written):
            continue  # there from a folder a launch may run in
        line = next((n for n, t in enumerate(text.splitlines(), 1) if key in t and written in t), 1)
        near = next(iter(sorted(index.by_name.get(PurePosixPath(written).name, []))), "")
        out.append(MissingPath(shown, line, "deepspeed config", written, key, "certain", "", near))
    return out


def _readme_findings(root: Path, index: _Index) -> list[MissingPath]:
    """The launch lines of the READMEs' shell blocks (root and one level down): a path they name
    that the repository does not hold is said, as a user who copies the line meets it: a warning
    when the repository holds a file of that name elsewhere (a moved or renamed recipe), else
    info (a placeholder the reader fills in)."""
    from envdoctor.plan.readme_blocks import readme_blocks

    out: list[MissingPath] = []
    for path in walk(
        root,
        ("README*.md", "readme*.md"),
        max_files=20,
        max_depth=1,
        skip_dirs=_SKIP_DIRS,
        skip_hidden_dirs=True,
    ):
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        shown = path.relative_to(root).as_posix()
        for m in _script_findings(readme_blocks(text), shown, index):
            if m.certainty == "unknown":
                continue  # the README's line may run elsewhere: too little to say
            how = "likely" if m.near else "unknown"
            out.append(
                MissingPath(
                    m.file,
                    m.line,
                    m.kind,
                    m.written,
                    m.option,
                    how,
                    "named in the README's shell block",
                    m.near,
                )
            )
    return out


def repo_paths(root: Path) -> dict[str, list[dict[str, Any]]]:
    """``{"missing": [MissingPath…], "unexported": [UnexportedDevices…]}`` (as dicts) of the
    repository at ``root``."""
    index = _Index(root)
    missing: list[MissingPath] = []
    unexported: list[UnexportedDevices] = []
    scripts = walk(
        root,
        SCRIPT_PATTERNS,
        max_files=MAX_SCRIPTS,
        max_depth=MAX_DEPTH,
        skip_dirs=_SKIP_DIRS,
        skip_hidden_dirs=True,
    )
    for path in scripts:
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        shown = path.relative_to(root).as_posix()
        if (
            index.complete
            and not _VENDORED & set(PurePosixPath(shown).parts[:-1])
            and len(missing) < MAX_FOUND
        ):
            missing += _script_findings(text, shown, index)
        unexported += unexported_devices(text, shown)
    if index.complete:
        missing += _readme_findings(root, index)
    if index.complete:
        configs = walk(
            root,
            CONFIG_PATTERNS,
            max_files=MAX_CONFIGS,
            max_depth=MAX_DEPTH,
            skip_dirs=_SKIP_DIRS,
            skip_hidden_dirs=True,
        )
        for path in configs:
            missing += _config_findings(path, path.relative_to(root).as_posix(), index)
    return {
        "missing": [m.to_dict() for m in missing[:MAX_FOUND]],
        "unexported": [u.to_dict() for u in unexported[:MAX_FOUND]],
    }
