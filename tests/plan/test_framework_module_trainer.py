"""A training script that imports a framework's package for a helper (verl's reward scorer) and
hands the training to a repository module of its own that builds TRL's GRPOTrainer is TRL's run,
not the framework's: plan/framework.from_script looked at the script's own calls alone
(gate16). A script that imports the framework and whose modules build no GRPOTrainer stays the
framework's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envdoctor.plan.build import build_plan

SCRIPT = (
    "from verl.utils.reward_score import gsm8k\n"
    "from mylib.train import run\n\n"
    "def reward(completions, answer, **kw):\n"
    "    return [gsm8k.compute_score(c, a) for c, a in zip(completions, answer)]\n\n"
    "run(reward)\n"
)
TRL_MODULE = (
    "from trl import GRPOConfig, GRPOTrainer\n\n"
    "def run(reward):\n"
    "    trainer = GRPOTrainer(model='Qwen/Qwen2.5-0.5B', reward_funcs=[reward],\n"
    "                          args=GRPOConfig(output_dir='o'))\n"
    "    trainer.train()\n"
)
OTHER_MODULE = "def run(reward):\n    return reward\n"


@pytest.mark.parametrize("module, trains", [(TRL_MODULE, None), (OTHER_MODULE, "verl")])
def test_a_module_of_the_repository_that_builds_grpotrainer_is_trls(
    tmp_path: Path, module: str, trains
) -> None:
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text("")
    (tmp_path / "mylib" / "train.py").write_text(module)
    (tmp_path / "train.py").write_text(SCRIPT)
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        plan = build_plan(config_dict={}, launch="python train.py", live=False)
    finally:
        os.chdir(here)
    assert (plan.framework.key if plan.framework else None) == trains
    if trains is None:
        assert (
            plan.script is not None and plan.script.grpo_in_module == "GRPOTrainer(...) in mylib/train.py:4"
        )
