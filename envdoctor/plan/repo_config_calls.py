"""The repository's scripts that build their GRPOConfig in code, for the hook:
``GRPOConfig(num_generations=4, vllm_device="cuda:1")`` with literal keywords, or
``GRPOConfig(**{"max_prompt_length": 512})`` from a mapping the file spells out. Each such script
is judged as the config it builds (the same rules as a YAML config), through ``script_reader``'s
reading of one script (syntax tree only; nothing imported or run).

Bounded like the repository's other walks (``repository_keys``): at most ``MAX_SCRIPTS`` scripts,
files that do not name GRPOConfig are not parsed, tests are not training scripts.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from pathlib import Path

from envdoctor.plan.repository_keys import REPO_MAX_SECONDS, _python_files
from envdoctor.plan.script_reader import read_script, read_source

#: scripts judged for the configs they build, at most
MAX_SCRIPTS = 24
#: folders and names of test code: a test builds configs to see them refused, not to train
_TEST_DIRS = frozenset({"tests", "test", "testing", "unit_tests"})


def _is_test(rel: Path) -> bool:
    name = rel.name
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or bool(_TEST_DIRS & set(rel.parts[:-1]))
    )


def config_scripts(root: str | os.PathLike[str]) -> list[str]:
    """The repository's scripts (paths relative to ``root``) that call GRPOConfig (or a
    subclass) with keywords envdoctor can read: literal values, argparse options, keys set in
    code; nearest levels first."""
    return _scan(str(root))[0]


def call_scripts(root: str | os.PathLike[str]) -> list[str]:
    """The repository's scripts (relative to ``root``) that call TRL's trainer with keywords
    (``GRPOTrainer(reward_kwargs=…)``, ``trainer.create_model_card(…)``): their calls are
    judged against the TRL release (CFG008) even where the config comes from a YAML file."""
    return _scan(str(root))[1]


@lru_cache(maxsize=4)
def _scan(root: str) -> tuple[list[str], list[str]]:
    """One walk of the repository's Python files, each script read once: (config_scripts,
    call_scripts). Cached for one hook run (the hook clears it when it starts)."""
    base = Path(root)
    deadline = time.monotonic() + REPO_MAX_SECONDS
    configs: list[str] = []
    calls: list[str] = []
    for path in _python_files(base, deadline):
        rel = path.relative_to(base)
        if _is_test(rel):
            continue
        data, _ = read_source(path)
        if data is None or b"(" not in data or (b"GRPOConfig" not in data and b"GRPOTrainer" not in data):
            continue
        decl = read_script(path)
        if decl.problem is not None:
            continue
        if len(configs) < MAX_SCRIPTS and any(
            c.values or c.from_flags or c.unknown for c in decl.config_calls
        ):
            configs.append(str(rel))
        if len(calls) < MAX_SCRIPTS and any(c.keywords for c in decl.trl_calls):
            calls.append(str(rel))
        if len(configs) >= MAX_SCRIPTS and len(calls) >= MAX_SCRIPTS:
            break
    return configs, calls


def forget_scan() -> None:
    """Drop the cached walk (the hook starts each run from the files as they are)."""
    _scan.cache_clear()
