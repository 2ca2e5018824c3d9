"""A Hydra trainer (``@hydra.main(config_path="conf", config_name="config")`` with a
``defaults:`` list and ``conf/<group>/<option>.yaml``): the config Hydra composes is read from the
repository's files with the launch line's overrides, its GRPO keys judged; ``fix`` sets a key with
a Hydra override on the trainer's line; where the files are not in the repository the batch is
said to be unread (info), never judged from TRL's defaults. Issue 35 (gate13)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.plan.hydra_compose import compose
from envdoctor.remedy import Rerun, close
from tests.conftest import snapshot

STACK = {"trl": "0.17.0", "torch": "2.6.0", "transformers": "4.51.0", "vllm": "0.8.5"}

SCRIPT = """\
import hydra
from omegaconf import DictConfig, OmegaConf
from trl import GRPOConfig, GRPOTrainer


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg: DictConfig):
    args = GRPOConfig(output_dir="out", **OmegaConf.to_container(cfg.grpo))
    trainer = GRPOTrainer(model=cfg.model.name, reward_funcs=[], args=args)
    trainer.train()


if __name__ == "__main__":
    main()
"""

ATTRS = """\
import hydra
from trl import GRPOConfig, GRPOTrainer


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg):
    t = cfg.training
    args = GRPOConfig(output_dir="out", num_generations=t.num_generations,
                      per_device_train_batch_size=t.batch_size)
    GRPOTrainer(model=cfg.model.name, reward_funcs=[], args=args).train()
"""


def _repo(tmp_path: Path, script: str = SCRIPT, files: bool = True) -> Path:
    (tmp_path / "train.py").write_text(script)
    if files:
        (tmp_path / "conf" / "grpo").mkdir(parents=True)
        (tmp_path / "conf" / "config.yaml").write_text(
            "defaults:\n  - grpo: default\n  - _self_\nmodel:\n  name: Qwen/Qwen2.5-0.5B\n"
            "training:\n  num_generations: 4\n  batch_size: 3\n"
        )
        (tmp_path / "conf" / "grpo" / "default.yaml").write_text(
            "per_device_train_batch_size: 3\nnum_generations: 4\n"
        )
        (tmp_path / "conf" / "grpo" / "big.yaml").write_text(
            "per_device_train_batch_size: 4\nnum_generations: 8\n"
        )
    return tmp_path / "train.py"


def _check(script: Path, extra: str = ""):
    plan = build_plan(launch=f"accelerate launch --num_processes 2 {script} {extra}".strip(), live=False)
    facts = from_dict(snapshot(2, packages=STACK), "t")
    return facts, plan, run_rules(Context(facts=facts, plan=plan)).findings


def test_compose_reads_defaults_self_and_overrides(tmp_path):
    script = _repo(tmp_path)
    data, primary = compose(str(script), "conf", "config", [])
    assert data["grpo"] == {"per_device_train_batch_size": 3, "num_generations": 4}
    assert primary.endswith("config.yaml")
    data, _ = compose(str(script), "conf", "config", ["grpo=big", "grpo.num_generations=16", "+extra.k=1"])
    assert data["grpo"] == {"per_device_train_batch_size": 4, "num_generations": 16}
    assert data["extra"] == {"k": 1}


def test_the_composed_grpo_keys_are_judged(tmp_path):
    script = _repo(tmp_path)
    _, plan, found = _check(script)
    assert plan.config["num_generations"] == 4
    assert [f.severity.value for f in found if f.rule == "CFG002"] == ["error"]
    _, _, found = _check(script, "grpo=big")
    assert not [f for f in found if f.rule == "CFG002"]


def test_attribute_reads_of_the_hydra_config_are_followed(tmp_path):
    script = _repo(tmp_path, ATTRS)
    _, plan, found = _check(script)
    assert plan.config["per_device_train_batch_size"] == 3
    assert [f.severity.value for f in found if f.rule == "CFG002"] == ["error"]


def test_fix_sets_a_hydra_override_on_the_trainers_line(tmp_path):
    script = _repo(tmp_path)
    facts, plan, _ = _check(script)
    closure = close(facts, plan, Rerun(None, None))
    launch = closure.changes.to_dict()["launch"]
    assert launch
    assert "grpo.num_generations=" in launch[-1] or "grpo.per_device_train_batch_size=" in launch[-1]
    assert not closure.changes.to_dict()["config"]["set"]


def test_an_unread_hydra_config_is_said_as_info(tmp_path):
    script = _repo(tmp_path, files=False)
    _, _, found = _check(script)
    (f,) = [f for f in found if f.rule == "CFG002"]
    assert f.severity.value == "info" and "Hydra" in f.message and "not in the repository" in f.message
    assert not [f for f in found if f.severity.value in ("warning", "error")]
