"""Job launchers a repository declares for its training script (an Azure ML job, a SageMaker
estimator, a SkyPilot task, a Slurm batch script, a Kubeflow PyTorchJob / TrainJob, a Modal
function, a Hugging Face job): how many processes each node runs, on how many nodes, and the
launch line it runs there.

A bare ``python train.py`` says nothing of the processes a launcher starts around it (Azure ML's
PyTorch distribution starts one per GPU and sets torch.distributed's variables): where the
repository declares a job that runs the trainer's script, the layout uses the job's counts
(``plan/layout.py``), or leaves the layout unresolved where the job's count is not known (an SDK
call with arguments that are not literals). Nothing is run; Python is read by its syntax tree.

Each kind is one module with ``read(text, shown) -> list[JobLaunch]``; ``REGISTRY`` names the
bytes its input holds, and a module is imported only for a file that holds them.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: kind -> (module, file name patterns, the bytes its input holds: every one of some group)
REGISTRY: dict[str, tuple[str, tuple[str, ...], tuple[tuple[bytes, ...], ...]]] = {
    "azureml": (
        "azureml",
        ("*.yml", "*.yaml", "*.py", "*.ipynb"),
        ((b"azure.ai.ml", b"command("), (b"command:", b"distribution:"), (b"command:", b"azureml")),
    ),
    "sagemaker": (
        "sagemaker",
        ("*.py", "*.ipynb"),
        ((b"sagemaker", b"entry_point", b"instance_type"), (b"sagemaker", b"ModelTrainer", b"SourceCode")),
    ),
    "skypilot": ("skypilot", ("*.yml", "*.yaml"), ((b"run:", b"accelerators:"), (b"run:", b"num_nodes:"))),
    "slurm": ("slurm", ("*.slurm", "*.sbatch", "*.sh", "*.bash"), ((b"#SBATCH",),)),
    "kubeflow": ("kubeflow", ("*.yml", "*.yaml"), ((b"kind: PyTorchJob",), (b"kind: TrainJob",))),
    "modal": ("modal_app", ("*.py",), ((b"import modal", b"gpu="), (b"from modal", b"gpu="))),
    "hf_jobs": ("hf_jobs", ("*.py", "*.ipynb"), ((b"run_job(", b"command=", b"huggingface_hub"),)),
}
#: folders read for declarations: the script's folder and those above it up to the repository's
#: root, and the root's subfolders to this depth; at most this many files of at most this size
SUB_DEPTH = 1
MAX_FILES = 300
MAX_BYTES = 512 * 1024
_SKIP = {
    "node_modules",
    "site-packages",
    "dist-packages",
    "build",
    "dist",
    "__pycache__",
    "venv",
    ".venv",
    ".git",
}


@dataclass
class JobLaunch:
    """One job a launcher runs: ``per_node`` processes on each of ``nodes`` nodes with
    ``gpus_per_node`` GPUs (None: not known), running ``command``; ``unknown`` says why the
    process count is not known; ``distributed``: the processes form one torch.distributed job
    (the launcher or the launcher line it runs sets RANK / LOCAL_RANK / WORLD_SIZE)."""

    kind: str
    source: str  # "job.yml:3", "launch.ipynb"
    command: str | None = None
    per_node: int | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    unknown: str | None = None
    distributed: bool = False
    env: dict[str, str] = field(default_factory=dict)
    scripts: tuple[str, ...] = ()  # what it runs (file names, modules): matched to the trainer's
    #: the declaration's own file runs the training in the job's process (a Modal function that
    #: imports and calls the training code): ``command`` is ``python <that file>``, whose script
    #: envdoctor reads even where the counts are not known
    in_process: bool = False

    def describe(self) -> str:
        nodes = self.nodes or 1
        return (
            f"{self.per_node} process{'es' if self.per_node != 1 else ''} per node"
            + (f" on {nodes} nodes" if nodes > 1 else "")
            + (f" ({self.gpus_per_node} GPUs per node)" if self.gpus_per_node else "")
        )


def mapping(value: Any) -> dict[str, Any]:
    """``value`` where it is a mapping (a YAML section), else an empty one."""
    return value if isinstance(value, dict) else {}


def yaml_documents(text: str) -> list[Any]:
    """The YAML documents of ``text`` ([] where it is not YAML that safe_load reads)."""
    import yaml

    from envdoctor.errors import InputError
    from envdoctor.parsing import check_structure

    try:
        check_structure(text, "job declaration")  # no alias bomb, no nesting past the limit
        return list(yaml.safe_load_all(text))
    except (yaml.YAMLError, InputError):
        return []


def _holds(data: bytes, markers: tuple[tuple[bytes, ...], ...]) -> bool:
    return any(all(m in data for m in group) for group in markers)


def _folders(script: Path, root: Path) -> list[Path]:
    """The script's folder and every folder above it up to the repository's root: the nearest
    folder above that holds ``.git`` (a job's code folder, ``src/``, sits below its declaration),
    else ``root``, the working folder, where the script is below it."""
    here = script.parent.resolve()
    root = root.resolve()
    top = next((p for p in [here, *here.parents][:8] if (p / ".git").exists()), None)
    if top is None:
        top = root if (here == root or root in here.parents) else here
    out = [here]
    while here != top and here.parent != here:
        here = here.parent
        out.append(here)
    return out


def _candidates(folders: list[Path]) -> list[Path]:
    patterns = {p for _, pats, _ in REGISTRY.values() for p in pats}
    seen: dict[Path, None] = {}
    for top in folders:  # each folder's own files; the root's subfolders too (slurm/, k8s/, jobs/)
        queue = [(top, 0 if top == folders[-1] else SUB_DEPTH)]
        while queue and len(seen) < MAX_FILES:
            folder, depth = queue.pop(0)
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for e in entries:
                if e.is_symlink() or e.name.startswith("."):
                    continue
                if e.is_file() and any(fnmatch.fnmatch(e.name, p) for p in patterns):
                    seen.setdefault(e.resolve(), None)
                elif e.is_dir() and depth < SUB_DEPTH and e.name not in _SKIP and e.resolve() not in folders:
                    queue.append((e, depth + 1))
    return list(seen)[:MAX_FILES]


def read_file(path: Path, shown: str) -> list[JobLaunch]:
    """Every job ``path`` declares (its readers loaded only where it holds their bytes)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    out: list[JobLaunch] = []
    for module, patterns, markers in REGISTRY.values():
        if not any(fnmatch.fnmatch(path.name, p) for p in patterns) or not _holds(data, markers):
            continue
        text = data.decode("utf-8", errors="replace")
        if path.suffix == ".ipynb":
            from envdoctor.plan.launchers.pysource import notebook_code

            text = notebook_code(text)
        reader = importlib.import_module(f"envdoctor.plan.launchers.{module}")
        try:
            out += reader.read(text, shown)
        except (ValueError, TypeError, RecursionError, MemoryError):
            continue  # a file its reader cannot read declares nothing envdoctor knows
    return out


def _runs(job: JobLaunch, script: str | None, module: str | None) -> bool:
    names = {os.path.basename(s) for s in job.scripts}
    if script and os.path.basename(script) in names:
        return True
    return bool(module and module in job.scripts)


def jobs_for(script: str | None, module: str | None, path: str, root: Path | None = None) -> list[JobLaunch]:
    """The jobs declared near the training script ``path`` (its folder and those above it up
    to ``root``, the working folder) that run it."""
    import copy

    return copy.deepcopy(_jobs_for(script, module, os.path.abspath(path), str(root or Path.cwd())))


@functools.lru_cache(maxsize=32)  # once per process (``fix`` tries many lines of one script)
def _jobs_for(script: str | None, module: str | None, path: str, where: str) -> list[JobLaunch]:
    root = Path(where)
    folders = _folders(Path(path), root)
    found: list[JobLaunch] = []
    for file in _candidates(folders):
        try:  # from the repository's root (the top folder read)
            shown = str(file.relative_to(folders[-1]))
        except ValueError:
            shown = str(file)
        found += [j for j in read_file(file, shown) if _runs(j, script, module)]
    return found


def one_job(jobs: list[JobLaunch]) -> JobLaunch | None:
    """The job the layout follows: the one declaration, or several that agree; declarations
    that disagree leave the count unknown (the run could be any of them)."""
    if not jobs:
        return None
    counts = {(j.per_node, j.nodes or 1, j.unknown is None) for j in jobs}
    if len(counts) == 1:
        return jobs[0]
    where = ", ".join(
        dict.fromkeys(f"{j.kind} ({j.source}): {j.describe() if not j.unknown else 'unknown'}" for j in jobs)
    )
    same_file = all(j.in_process for j in jobs) and len({j.command for j in jobs}) == 1
    return JobLaunch(
        kind="Several job launchers",
        source=", ".join(dict.fromkeys(j.source for j in jobs)),
        unknown=f"the repository runs the script under launchers that disagree: {where}",
        scripts=jobs[0].scripts,
        # functions of one Modal app that each train in process: the app's file is the script
        command=jobs[0].command if same_file else None,
        in_process=same_file,
    )


def declared_jobs(root: Path, max_depth: int = 4) -> list[JobLaunch]:
    """Every job the repository at ``root`` declares whose count is known (the hook's recipes:
    how many processes run a config a job's command passes), a bounded walk."""
    from envdoctor.plan.repo_walk import walk

    patterns = sorted({p for _, pats, _ in REGISTRY.values() for p in pats})
    files = walk(
        root, patterns, max_files=MAX_FILES, max_depth=max_depth, skip_dirs=_SKIP, skip_hidden_dirs=True
    )
    out: list[JobLaunch] = []
    for file in files:
        shown = file.relative_to(root).as_posix()
        out += [j for j in read_file(file, shown) if j.unknown is None and j.per_node and j.command]
    return out
