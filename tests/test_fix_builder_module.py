"""Set 18's master-thesis-code c5a5843: `cd pipeline; python -m training.train --config
configs/e0.yaml`, whose training/train.py hands the run to training/grpo_runner.py, which builds
`GRPOConfig(**kwargs)` from `kwargs = dict(..., max_prompt_length=..., ...)` (then adds keys in a
branch). The `-m` module is found from the folder the `cd` went to (Launch.folder), the module
that builds GRPOTrainer builds the run's GRPOConfig (its calls are read), `dict(k=v)` gives the
keys the spread hands at least, and `fix` takes the keyword out where that module writes it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

TRAIN = """\
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from training.grpo_runner import GRPORunner

GRPORunner({"training": {}}).run()
"""
RUNNER = """\
from trl import GRPOConfig, GRPOTrainer


class GRPORunner:
    def __init__(self, config, use_vllm=False):
        self.config = config
        self._use_vllm = use_vllm

    def _grpo_config(self):
        t = self.config["training"]
        kwargs = dict(
            learning_rate=float(t.get("learning_rate", 5e-6)),
            max_prompt_length=t.get("max_prompt_length", 512),
            output_dir="out",
        )
        if self._use_vllm:
            kwargs["use_vllm"] = True
        return GRPOConfig(**kwargs)

    def run(self):
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=self._grpo_config()).train()
"""
LINE = ["--", "cd", "pipeline", "&&", "python", "-m", "training.train"]


def _repo(tmp_path: Path) -> None:
    (tmp_path / "pipeline" / "training").mkdir(parents=True)
    (tmp_path / "pipeline" / "training" / "__init__.py").write_text("")
    (tmp_path / "pipeline" / "training" / "train.py").write_text(TRAIN)
    (tmp_path / "pipeline" / "training" / "grpo_runner.py").write_text(RUNNER)


def _run(tmp_path: Path, cmd: str, trl: str) -> dict:
    out = run_cli(cmd, "--assume", f"trl=={trl}", "--format", "json", *LINE, cwd=tmp_path)
    return json.loads(out.stdout)


def test_a_key_the_builder_module_sets_is_judged_and_removed_there(tmp_path):
    _repo(tmp_path)
    found = [f for f in _run(tmp_path, "check", "1.6.0")["findings"] if f["rule"] == "CFG001"]
    assert found and "pipeline/training/grpo_runner.py" in found[0]["message"]
    assert "max_prompt_length" in found[0]["message"]
    out = _run(tmp_path, "fix", "1.6.0")
    assert "CFG001" in out["fixed"] and not [f for f in out["after"]["findings"] if f["rule"] == "CFG001"]
    text = (tmp_path / "pipeline" / "training" / "grpo_runner.py").read_text()
    assert "max_prompt_length" not in text and "learning_rate" in text
    again = [f for f in _run(tmp_path, "check", "1.6.0")["findings"] if f["severity"] == "error"]
    assert again == []


def test_a_release_that_takes_the_key_is_quiet(tmp_path):
    _repo(tmp_path)
    found = _run(tmp_path, "check", "0.24.0")["findings"]
    assert not [f for f in found if f["rule"] == "CFG001" and f["severity"] != "info"]
