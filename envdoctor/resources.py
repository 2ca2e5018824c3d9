"""Where the data under the top-level ``rules/`` folder lives (in the wheel or the checkout)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The source repository: pyproject's [project.urls] and the README's links use the same base
#: (tests/test_packaging.py keeps them equal). No git remote named one; this is the README's
#: names: the distribution `grpo-envdoctor` as owner, the command `envdoctor` as repository.
REPOSITORY = "https://github.com/grpo-envdoctor/envdoctor"
#: Files of the repository that a wheel does not ship as such (docs/, rules/, examples/).
_REPO_PATH = re.compile(r"^(?:docs|rules|examples|tests|scripts|bench)/[^\s]*")


def repo_url(reference: str) -> str:
    """A reference as a wheel user can open it: a repository path (``docs/memory.md#s10``,
    ``rules/knowledge/vllm.yaml (note)``) becomes its URL in the repository; URLs and other
    text are returned as they are."""
    m = _REPO_PATH.match(reference)
    if m is None:
        return reference
    return f"{REPOSITORY}/blob/main/{m.group(0)}{reference[m.end():]}"


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    """``envdoctor/_rules`` inside an installed wheel, else the checkout's ``rules/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("envdoctor's rules/ data folder is missing from this installation")


def read_yaml(path: Path) -> Any:
    """A shipped YAML file, parsed safely (with libyaml when PyYAML has it: several times faster)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506
