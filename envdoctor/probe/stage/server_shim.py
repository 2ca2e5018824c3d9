"""Start the probe's vLLM server before its model is written: import first, then run the line.

    python server_shim.py READY FALLBACK.json [--after DONE DEADLINE] -- PROGRAM ARG ...

Run by the runner under the interpreter of the server's own line (``trl vllm-serve …``,
``vllm serve …``, ``python -m …``). It imports what that line will import (vLLM's API server,
TRL's CLI) while the weights of the user's shape are still being written, waits for the
runner's word (``READY``, ``model.ready.json``), then runs the line in this process exactly as
Python would run it: a console script as ``__main__`` with its ``sys.argv``, ``-m MODULE`` as
``runpy`` does. When the writer failed (the word says ``faithful: false``), the generic model's
line from ``FALLBACK.json`` runs instead. With ``--after``, the line also waits for the file
``DONE`` (the probe's inspection of the model class for vLLM's cache, ``vllm_warm.py``) until
the wall-clock time ``DEADLINE``: vLLM looks in that cache once, early in its start, and does
the inspection again (about 20 s) when the answer is not there yet. A launcher that replaces
itself with ``python -m MODULE`` (``os.execve``, as ``trl vllm-serve`` does since it runs vLLM's
own server) runs that module here instead, with the environment it passed, so the imports are
not lost. Anything the shim cannot do this way is ``exec``'d as it is: the same server, only
later.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import runpy
import shutil
import sys
import time

#: what the server lines import first (each is optional: a missing one is simply not preloaded);
#: TRL's CLI only for a ``trl`` line
PRELOAD = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main")
PRELOAD_TRL = ("trl.cli",)


def _python_like(program: str) -> bool:
    return os.path.basename(program).startswith("python")


def _run_module(module: str, args: list[str]) -> None:
    spec = importlib.util.find_spec(module)
    sys.argv = [spec.origin if spec is not None and spec.origin else module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def _run(argv: list[str]) -> None:
    """Run ``argv`` in this process as its own interpreter would; exec it when that is not possible."""
    program, args = argv[0], argv[1:]
    if _python_like(program):
        if len(args) >= 2 and args[0] == "-m":
            _run_module(args[1], args[2:])
            return
        if args and not args[0].startswith("-"):
            sys.argv = list(args)
            runpy.run_path(args[0], run_name="__main__")
            return
        os.execvp(program, argv)  # noqa: S606 - the user's own server line, as given
    sys.argv = list(argv)
    runpy.run_path(program, run_name="__main__")  # a console script: Python source with a #! line


def _in_place_of_exec(real_execve):
    """``os.execve(sys.executable, [python, "-m", MODULE, …], env)``, run here with ``env``;
    any other exec is the real one."""

    def execve(path, args, env):  # noqa: ANN001 - os.execve's own signature
        args = list(args)
        same = os.path.realpath(str(path)) == os.path.realpath(sys.executable)
        if same and len(args) >= 3 and args[1] == "-m":
            os.environ.clear()
            os.environ.update(env)
            _run_module(args[2], args[3:])
            sys.exit(0)  # exec never returns: neither does the line it replaced
        real_execve(path, args, env)

    return execve


def _found(argv: list[str]) -> list[str]:
    """The program as the shell finds it on PATH (``trl`` → its full path)."""
    if argv and os.sep not in argv[0]:
        return [shutil.which(argv[0]) or argv[0], *argv[1:]]
    return argv


def _first_path(argv: list[str]) -> str:
    """What Python puts first on ``sys.path`` for ``argv``: the script's folder, or the working
    directory for ``-m`` (not this shim's folder)."""
    if not _python_like(argv[0]):
        return os.path.dirname(os.path.abspath(argv[0]))
    if len(argv) > 1 and not argv[1].startswith("-"):
        return os.path.dirname(os.path.abspath(argv[1]))
    return os.getcwd()


def _wait_for(path: str, deadline: float) -> None:
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)


def main() -> None:
    ready, fallback = sys.argv[1], sys.argv[2]
    cut = sys.argv.index("--")
    after = sys.argv[3:cut]
    argv = _found(sys.argv[cut + 1 :])
    sys.path[0] = _first_path(argv)
    sys.argv = list(argv)  # what the line's modules see, should one read it while imported
    trl = os.path.basename(argv[0]) == "trl"
    if trl:  # set by `trl vllm-serve` before vLLM's server starts: in place before vLLM is imported
        os.environ.setdefault("VLLM_SERVER_DEV_MODE", "1")
    for module in (PRELOAD_TRL if trl else ()) + PRELOAD:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the line itself will say what is missing
            continue
    while not os.path.exists(ready):  # the runner's limit ends this process if it never comes
        time.sleep(0.05)
    if len(after) == 3 and after[0] == "--after":
        try:
            _wait_for(after[1], float(after[2]))
        except ValueError:
            pass
    with open(ready) as fh:
        word = json.load(fh)
    if not word.get("faithful"):
        with open(fallback) as fh:
            argv = _found(json.load(fh))
    os.execve = _in_place_of_exec(os.execve)
    _run(argv)


if __name__ == "__main__":
    main()
