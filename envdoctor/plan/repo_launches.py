"""The launch lines a repository writes down for its own recipes: ``accelerate launch …`` and
``torchrun …`` in its README, shell scripts, Makefile and slurm files (a bounded walk), with the
GRPO config each passes (``--config recipes/…/grpo/config.yaml``), the accelerate config
(``--config_file``) and the process count (``--num_processes``, else the accelerate config's).

The hook reads them to know how many processes a recipe runs under (the batch rule) and which
accelerate config belongs to which recipe; nothing is run.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from envdoctor.plan.repo_walk import walk

#: files read: their names, and how many / how big at most
PATTERNS = ("README*.md", "*.sh", "*.bash", "*.slurm", "*.sbatch", "Makefile", "*.mk", "*.md", "*.ipynb")
MAX_FILES = 200
MAX_BYTES = 512 * 1024
MAX_DEPTH = 4
_SKIP_DIRS = {"node_modules", "site-packages", "dist-packages", "build", "dist", "__pycache__", "venv"}
_LAUNCHER = re.compile(
    r"\b(accelerate\s+launch|torchrun|python\d?(?:\.\d+)?\s+-m\s+torch\.distributed\.run)\b"
)


@dataclass
class RepoLaunch:
    """One launch line of the repository: where it is, its GRPO config (as written: a path,
    or a pattern where the line has shell variables), accelerate config and process count."""

    file: str
    line: int
    text: str
    config: str | None = None
    accelerate: str | None = None
    processes: int | None = None
    machines: int | None = None
    script: str | None = None


@dataclass
class RepoLaunches:
    launches: list[RepoLaunch] = field(default_factory=list)
    files: int = 0

    def for_config(self, config: str) -> list[RepoLaunch]:
        """The launch lines that pass this GRPO config (a path relative to the root)."""
        return [ln for ln in self.launches if ln.config and _matches(ln.config, config)]

    def for_accelerate(self, accelerate: str) -> list[RepoLaunch]:
        return [ln for ln in self.launches if ln.accelerate and _matches(ln.accelerate, accelerate)]


def _matches(written: str, path: str) -> bool:
    written = written.removeprefix("./")
    path = path.removeprefix("./")
    if "*" in written:
        return fnmatch.fnmatchcase(path, written)
    return written == path


def _files(root: Path) -> list[Path]:
    return walk(
        root, PATTERNS, max_files=MAX_FILES, max_depth=MAX_DEPTH, skip_dirs=_SKIP_DIRS, skip_hidden_dirs=True
    )


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each line of a shell script, ``\\`` continuations joined."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        parts = [lines[i].rstrip()]
        while parts[-1].endswith("\\") and i + 1 < len(lines):
            parts[-1] = parts[-1][:-1]
            i += 1
            parts.append(lines[i].rstrip())
        i += 1
        out.append((start + 1, " ".join(p.strip() for p in parts)))
    return out


_OPTION_LINE = re.compile(r"^\s*--?[A-Za-z][\w.-]*(?:[= ]|$)")


def _commands(text: str) -> list[tuple[int, str]]:
    """(first line, command) of each command that runs a launcher, continuations joined, and
    option lines that a missing ``\\`` cut off the launch joined back to it (the launch as its
    author meant it; the hook says the cut itself: REP005)."""
    lines: list[tuple[int, str]] = []
    for line, joined in logical_lines(text):
        if lines and _OPTION_LINE.match(joined) and _LAUNCHER.search(lines[-1][1]) and ")" not in joined[:40]:
            lines[-1] = (lines[-1][0], f"{lines[-1][1]} {joined.strip()}")
            continue
        lines.append((line, joined))
    return [
        (line, joined.lstrip("$ ").strip())
        for line, joined in lines
        if _LAUNCHER.search(joined) and len(joined) < 4000
    ]


_VAR = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]+>|\{[A-Za-z_]+\}")


def _path(word: str | None) -> str | None:
    if not word:
        return None
    word = word.strip("\"'")
    return _VAR.sub("*", word) if word.endswith((".yaml", ".yml", ".json")) else None


def _int(value: object) -> int | None:
    try:
        n = int(str(value))
    except (TypeError, ValueError):
        return None
    return n if 0 < n < 100_000 else None


def _option(words: list[str], *names: str) -> str | None:
    for i, w in enumerate(words):
        for name in names:
            if w == name and i + 1 < len(words):
                return words[i + 1]
            if w.startswith(name + "="):
                return w.split("=", 1)[1]
    return None


def _notebook(text: str) -> str:
    """A Jupyter notebook's cell sources, one after another (its launch lines sit in cells as
    ``!accelerate launch …`` or in markdown); '' when it is not a notebook's JSON."""
    import json

    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return ""
    out = []
    for cell in cells if isinstance(cells, list) else []:
        source = cell.get("source") if isinstance(cell, dict) else None
        lines = source if isinstance(source, list) else [source] if isinstance(source, str) else []
        out.append("".join(x for x in lines if isinstance(x, str)))
    return "\n".join(out).replace("\n!", "\n")


def _anchored(root: Path, folder: Path, written: str | None) -> str | None:
    """A path a launch line names, from the repository root: as written where it exists there,
    else from the folder of the file that holds the line or a folder between it and the root (a
    notebook or README run in its own folder, ``cd training && accelerate launch --config_file
    configs/…``, a script under ``project/src/`` run from ``project/``)."""
    if not written or "*" in written:
        return written
    try:
        if (root / written).exists():
            return written
        here = folder
        while here != root and root in here.parents:  # the script's folder, then those between
            if (here / written).exists():
                return str((here / written).relative_to(root))
            here = here.parent
    except (OSError, ValueError):
        pass
    return written


def read_launches(root: Path) -> RepoLaunches:
    """Every launch line of the repository at ``root`` (bounded: ``MAX_FILES`` files)."""
    import shlex

    found = RepoLaunches()
    for path in _files(root):
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.suffix == ".ipynb":
            text = _notebook(text)
        found.files += 1
        shown = str(path.relative_to(root))
        for line, command in _commands(text):
            m = _LAUNCHER.search(command)
            if m is None:
                continue
            body = command[m.start() :]
            try:
                words = shlex.split(body, comments=True)
            except ValueError:
                words = body.split()
            script = next((w for w in words if w.endswith(".py")), None)
            after = words[words.index(script) + 1 :] if script else []
            procs = _option(
                words[: words.index(script)] if script else words, "--num_processes", "--nproc_per_node"
            )
            found.launches.append(
                RepoLaunch(
                    file=shown,
                    line=line,
                    text=command[:300],
                    config=_anchored(
                        root, path.parent, _path(_option(after, "--config", "--config_file", "--config-file"))
                    ),
                    accelerate=_anchored(
                        root,
                        path.parent,
                        _path(_option(words[: words.index(script)] if script else words, "--config_file")),
                    ),
                    processes=_int(procs),
                    machines=_int(_option(words, "--num_machines", "--nnodes")),
                    script=script,
                )
            )
    found.launches += _job_launches(root)
    return found


def _job_launches(root: Path) -> list[RepoLaunch]:
    """The runs job launchers declare (an Azure ML job, a SageMaker estimator, a SkyPilot task, a
    Slurm script's srun…: envdoctor.plan.launchers) with the GRPO config their command passes
    and the processes they start in all; only those whose count is known."""
    import shlex

    from envdoctor.plan.launchers import declared_jobs

    out: list[RepoLaunch] = []
    for job in declared_jobs(root):
        try:
            words = shlex.split(job.command or "", comments=True)
        except ValueError:
            words = (job.command or "").split()
        script = next((w for w in words if w.endswith(".py")), None)
        after = words[words.index(script) + 1 :] if script else []
        file, _, line = job.source.partition(":")
        out.append(
            RepoLaunch(
                file=file,
                line=int(line) if line.isdigit() else 1,
                text=f"{job.kind}: {job.describe()}",
                config=_path(_option(after, "--config", "--config_file", "--config-file")),
                processes=(job.per_node or 1) * (job.nodes or 1),
                script=script,
            )
        )
    return out


def accelerate_processes(path: Path) -> int | None:
    """``num_processes`` of an accelerate config file (None when it is not read or says none)."""
    from envdoctor.errors import InputError
    from envdoctor.parsing import read_mapping

    try:
        data = read_mapping(str(path), str(path))
    except (InputError, OSError):
        return None
    return _int(data.get("num_processes"))
