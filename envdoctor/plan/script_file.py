"""The Python file a launch line runs (a ``.py`` script, or the file of a ``-m`` module)."""

from __future__ import annotations

import os

from envdoctor.plan.interface import Launch


def script_file(launch: Launch) -> str | None:
    """The Python file the launch line runs: its ``.py`` script, or the file of the module it
    runs with ``-m`` (``python -m training.train_grpo``: training/train_grpo.py, or its
    package's __main__.py; under src/ too, a src-layout package installed from the repository)
    where that file is here; None otherwise."""
    if launch.script:
        return launch.script if launch.script.endswith(".py") else None
    module = launch.module or ""
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return None
    base = os.path.join(*module.split("."))
    # after ``cd pipeline``, ``python -m training.train`` runs pipeline/training/train.py
    folder = getattr(launch, "folder", "") or ""
    start = folder if not os.path.isabs(folder) else ""
    for root in dict.fromkeys((start, os.path.join(start, "src") if start else "src", "", "src")):
        for path in (f"{base}.py", os.path.join(base, "__main__.py")):
            if os.path.isfile(os.path.join(root, path)):
                return os.path.normpath(os.path.join(root, path))
    return None
