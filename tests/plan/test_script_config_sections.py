"""A training script that reads its config file itself and hands GRPOConfig values from nested
sections of it (``training_conf = conf["training"]; GRPOConfig(per_device_train_batch_size=
training_conf.get(...))``, ``**conf["grpo"]``, a ``load_config()`` of its own, a Hydra entry's
``cfg``): the values there are judged as the config's, the sections it reads are its own keys,
and ``envdoctor fix`` edits the value where the script reads it. Issue 35 (gate13)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.plan.script_reader import read_script
from envdoctor.remedy.config_edit import edit_config
from tests.conftest import snapshot

STACK = {"trl": "0.17.0", "torch": "2.6.0", "transformers": "4.51.0", "vllm": "0.8.5"}

NESTED = """\
import argparse

import yaml
from trl import GRPOConfig, GRPOTrainer

p = argparse.ArgumentParser()
p.add_argument("--config", default="config.yaml")
args = p.parse_args()
with open(args.config) as f:
    conf = yaml.safe_load(f)
training_conf = conf["training"]
cfg = GRPOConfig(
    output_dir="out",
    per_device_train_batch_size=training_conf.get("per_device_train_batch_size"),
    num_generations=training_conf["num_generations"],
    learning_rate=float(training_conf.get("learning_rate", 1e-6)),
)
trainer = GRPOTrainer(model=conf["model"]["name"], reward_funcs=[], args=cfg)
"""

SPREAD = """\
import sys

import yaml
from trl import GRPOConfig, GRPOTrainer


def load_config(path):
    with open(path) as f:
        return yaml.safe_load(f)


conf = load_config(sys.argv[sys.argv.index("--config") + 1])
cfg = GRPOConfig(output_dir="out", **conf["grpo"])
trainer = GRPOTrainer(model=conf["model"], reward_funcs=[], args=cfg)
"""

CONFIG = """\
model:
  name: Qwen/Qwen2.5-0.5B
training:
  per_device_train_batch_size: 3  # per GPU
  num_generations: 4
  learning_rate: 1.0e-6
"""

SPREAD_CONFIG = """\
model: Qwen/Qwen2.5-0.5B
grpo:
  per_device_train_batch_size: 3
  num_generations: 4
  num_generation: 4
"""


def _run(tmp_path: Path, script: str, config: str):
    (tmp_path / "train.py").write_text(script)
    (tmp_path / "config.yaml").write_text(config)
    cfg = str(tmp_path / "config.yaml")
    plan = build_plan(
        config=cfg,
        launch=f"accelerate launch --num_processes 2 {tmp_path / 'train.py'} --config {cfg}",
        live=False,
    )
    facts = from_dict(snapshot(2, packages=STACK), "t")
    return plan, run_rules(Context(facts=facts, plan=plan)).findings


def test_the_reader_follows_a_nested_section():
    decl_path = Path(__file__)  # any path: read_script takes the text
    decl = read_script(decl_path, NESTED)
    (call,) = decl.config_calls
    assert call.from_file == {
        "per_device_train_batch_size": ("training", "per_device_train_batch_size"),
        "num_generations": ("training", "num_generations"),
        "learning_rate": ("training", "learning_rate"),
    }


def test_a_batch_in_a_nested_section_is_judged(tmp_path):
    plan, found = _run(tmp_path, NESTED, CONFIG)
    assert plan.config["per_device_train_batch_size"] == 3 and plan.config["num_generations"] == 4
    (cfg002,) = [f for f in found if f.rule == "CFG002"]
    assert cfg002.severity.value == "error"
    # the sections the script reads are its own, not GRPOConfig keys
    assert not [f for f in found if f.rule == "CFG004" and "training" in f.message]


def test_fix_edits_the_value_where_the_script_reads_it(tmp_path):
    plan, _ = _run(tmp_path, NESTED, CONFIG)
    from envdoctor.plan.build import file_places

    places = file_places(plan)
    assert places["num_generations"] == ("training", "num_generations")
    new = edit_config(CONFIG, "config.yaml", {"per_device_train_batch_size": 4}, [], places)
    assert "  per_device_train_batch_size: 4  # per GPU\n" in new
    assert "\nper_device_train_batch_size" not in new


def test_a_spread_section_is_the_configs(tmp_path):
    plan, found = _run(tmp_path, SPREAD, SPREAD_CONFIG)
    assert plan.config["num_generations"] == 4
    assert [f for f in found if f.rule == "CFG002"]
    said = " ".join(f.message for f in found if f.rule == "CFG004")
    assert "num_generation" in said and "`grpo`" not in said


COMPUTED = """\
import yaml
from trl import GRPOConfig

conf = yaml.safe_load(open("config.yaml"))
training_conf = conf["training"]
per_device_train_batch_size = training_conf.get("per_device_train_batch_size", 1)
num_generations = training_conf.get("num_generations", 4)
cfg = GRPOConfig(
    output_dir="out",
    per_device_train_batch_size=per_device_train_batch_size,
    num_generations=num_generations,
    generation_batch_size=num_generations * per_device_train_batch_size,
)
"""


def test_a_batch_key_set_to_a_computed_value_leaves_the_batch_unjudged(tmp_path):
    # rlvr_experiments 2b889b0 (set 12b): generation_batch_size = num_generations * per_device;
    # TRL's default steps_per_generation is not what runs, so no error from it
    plan, found = _run(tmp_path, COMPUTED, CONFIG)
    assert plan.config["num_generations"] == 4 and plan.config["per_device_train_batch_size"] == 3
    (cfg002,) = [f for f in found if f.rule == "CFG002"]
    assert cfg002.severity.value == "info" and "generation_batch_size" in cfg002.message
