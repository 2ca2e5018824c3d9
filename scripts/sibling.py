"""Load another maintainer script of this folder as a module: the scripts are files, not a package,
and several derive scripts share one reading of releases (``derive_frame_index``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(name: str) -> ModuleType:
    """``scripts/<name>.py`` as the module ``name``, loaded once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]  # a script that failed to load is not kept half-made
        raise
    return mod
