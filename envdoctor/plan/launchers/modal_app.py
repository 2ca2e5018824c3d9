"""Modal functions: ``@app.function(gpu="H100:8")`` (a GPU type and count per container) whose
body starts the training with a literal command (``subprocess.run(["accelerate", "launch",
…])``), and ``@modal.experimental.clustered(size=N)`` for N containers
(https://modal.com/docs/guide/gpu, https://modal.com/docs/guide/multi-node-training).
"""

from __future__ import annotations

import ast
import shlex

from envdoctor.plan.launchers import JobLaunch
from envdoctor.plan.launchers.counts import finish
from envdoctor.plan.launchers.pysource import UNKNOWN, constants, imports, keywords, literal, name_of, parse

KIND = "Modal function"
_RUNS = {"run", "check_call", "check_output", "call", "Popen", "system"}


def _gpu_count(spec: object) -> int | None:
    if not isinstance(spec, str):
        return None
    _, _, n = spec.partition(":")
    return int(n) if n.isdigit() else 1


def read(text: str, shown: str) -> list[JobLaunch]:
    tree = parse(text)
    if tree is None or not imports(tree, "modal"):
        return []
    consts = constants(tree)
    out: list[JobLaunch] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        gpu, size = None, 1
        for dec in fn.decorator_list:
            if isinstance(dec, ast.Call) and name_of(dec.func) in ("function", "cls"):
                gpu = keywords(dec, consts).get("gpu")
            elif isinstance(dec, ast.Call) and name_of(dec.func) == "clustered":
                got = keywords(dec, consts).get("size", 1)
                size = got if isinstance(got, int) else 0
        if gpu is None:
            continue
        before = len(out)
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call) or name_of(call.func) not in _RUNS or not call.args:
                continue
            arg = literal(call.args[0], consts)
            where = f"{shown}:{call.lineno}"
            job = JobLaunch(kind=KIND, source=where, gpus_per_node=_gpu_count(gpu), nodes=size or None)
            if isinstance(arg, list) and all(isinstance(a, (str, int, float)) for a in arg):
                job.command = shlex.join(str(a) for a in arg)
            elif isinstance(arg, str):
                job.command = arg
            else:
                continue
            if gpu is UNKNOWN:
                job.unknown = "its gpu= is not a literal"
            elif not size:
                job.unknown = "its cluster size is not a literal"
            out += finish(job, 1, False) if not job.unknown else finish(job, None, False)
        if len(out) == before and _trains_in_process(fn):
            # no command started: the function imports the training code and calls it in its own
            # process (`from training.stage1_warmup import main; main()`), one process per
            # container: the app's file is the training script (its imports followed)
            job = JobLaunch(
                kind=KIND,
                source=f"{shown}:{fn.lineno}",
                command=shlex.join(["python", shown]),
                gpus_per_node=_gpu_count(gpu),
                nodes=size or None,
                per_node=1,
                in_process=True,
                scripts=(shown,),
            )
            if gpu is UNKNOWN:
                job.unknown = f"the gpu= of {fn.name}() is not a literal"
            elif not size:
                job.unknown = "its cluster size is not a literal"
            out.append(job)
    return out


def _trains_in_process(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The function imports repository code (``from training.x import main``) or a training
    library and calls something: it runs the training itself, not a command."""
    imports = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return bool(imports) and any(isinstance(n, ast.Call) for n in ast.walk(fn))
