"""Fixtures of the memory-plan tests: a model directory holding a real config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def model_dir(tmp_path):
    def make(config: dict, name: str = "model") -> str:
        path = Path(tmp_path) / name
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(config))
        return str(path)

    return make
