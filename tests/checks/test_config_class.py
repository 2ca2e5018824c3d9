"""Config keys are judged against the class the training script builds for its trainer: TRL's
GRPOConfig (and a subclass of it read in the repository) as before; another package's class or
factory (verifiers' ``vf.grpo_defaults``, Unsloth's ``UnslothGRPOConfig``, open-r1's GRPOConfig
when open-r1 is not the repository) has fields envdoctor holds no table of, so a key TRL lacks
is info naming that class; another TRL trainer's config (SFTConfig) is named, not "GRPOConfig".
A script that cannot be read keeps today's judgement. Issue 35 (held-out set 8:
simple-reward-hacking's verifiers config drew "`num_iterations` is not known to TRL 0.15.2")."""

from __future__ import annotations

import pytest

from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

STACK = {"trl": "1.0.0", "vllm": "0.17.1", "torch": "2.10.0", "transformers": "4.57.1"}
OLD = {"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}

VERIFIERS = """\
import verifiers as vf

model, tokenizer = vf.get_model_and_tokenizer("Qwen/Qwen2.5-7B-Instruct")
training_args = vf.grpo_defaults(run_name="r")
training_args.num_iterations = 1
trainer = vf.GRPOTrainer(model=model, processing_class=tokenizer, env=None, args=training_args)
trainer.train()
"""

UNSLOTH = """\
from unsloth_compiled_cache.UnslothGRPOTrainer import UnslothGRPOConfig, UnslothGRPOTrainer

trainer = UnslothGRPOTrainer(model=None, args=UnslothGRPOConfig(output_dir="o"), train_dataset=None)
"""

OPEN_R1 = """\
from open_r1.configs import GRPOConfig, GRPOScriptArguments
from trl import GRPOTrainer, ModelConfig, TrlParser

parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
script_args, training_args, model_args = parser.parse_args_and_config()
trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args)
"""

TRL_GRPO = """\
from trl import GRPOConfig, GRPOTrainer, TrlParser, ModelConfig

parser = TrlParser((GRPOConfig, ModelConfig))
training_args, model_args = parser.parse_args_and_config()
trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args)
"""

SFT = """\
from trl import SFTConfig, SFTTrainer, TrlParser

parser = TrlParser((SFTConfig,))
(training_args,) = parser.parse_args_and_config()
trainer = SFTTrainer(model="Qwen/Qwen3-0.6B", args=training_args)
"""

OWN = """\
from dataclasses import dataclass

from trl import GRPOConfig, GRPOTrainer, TrlParser


@dataclass
class MyConfig(GRPOConfig):
    reward_scale: float = 1.0


parser = TrlParser((MyConfig,))
(training_args,) = parser.parse_args_and_config()
trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", args=training_args)
"""


def _found(tmp_path, script: str | None, config: dict, stack: dict = STACK):
    if script is not None:
        (tmp_path / "train.py").write_text(script)
    launch = f"accelerate launch --num_processes 1 {tmp_path / 'train.py'}"
    return [
        f
        for f in findings(snapshot(1, packages=stack), config=config, launch=launch)
        if f.rule.startswith("CFG")
    ]


@pytest.mark.parametrize(
    ("script", "kind", "name", "package"),
    [
        (VERIFIERS, "foreign", "vf.grpo_defaults", "verifiers"),
        (UNSLOTH, "foreign", "UnslothGRPOConfig", "unsloth_compiled_cache"),
        (OPEN_R1, "foreign", "GRPOConfig", "open_r1"),
        (TRL_GRPO, "trl", "GRPOConfig", "trl"),
        (SFT, "trl-other", "SFTConfig", "trl"),
        (OWN, "own", "MyConfig", ""),
    ],
)
def test_the_reader_places_the_config_class_the_script_builds(tmp_path, script, kind, name, package):
    (tmp_path / "train.py").write_text(script)
    got = read_script(tmp_path / "train.py").config_class
    assert got is not None
    assert (got.kind, got.name, got.package) == (kind, name, package)


def test_a_script_with_no_config_class_is_not_placed(tmp_path):
    (tmp_path / "train.py").write_text("import os\nprint(os.getcwd())\n")
    assert read_script(tmp_path / "train.py").config_class is None


def test_another_packages_config_makes_a_key_trl_lacks_info_naming_it(tmp_path):
    # TRL 0.15.2 has no num_iterations (0.16+): verifiers' own config does
    (f,) = [f for f in _found(tmp_path, VERIFIERS, {"num_iterations": 1}, OLD) if f.rule == "CFG001"]
    assert f.severity.value == "info"
    assert "vf.grpo_defaults (verifiers" in f.message and "not checked" in f.message


def test_another_packages_config_makes_a_near_typo_info_and_its_own_keys_named(tmp_path):
    got = _found(tmp_path, VERIFIERS, {"max_seq_len": 4096, "num_generation": 8})
    assert all(f.severity.value == "info" for f in got)
    typo = next(f for f in got if "num_generation`" in f.message)
    assert "did you mean `num_generations`" in typo.message and "vf.grpo_defaults" in typo.message
    own = next(f for f in got if "max_seq_len" in f.message)
    assert "vf.grpo_defaults (verifiers" in own.message


def test_trls_grpoconfig_still_judges_a_true_typo_and_a_removed_key(tmp_path):
    got = _found(
        tmp_path, TRL_GRPO, {"num_generation": 8, "max_prompt_length": 512}, {**STACK, "trl": "1.7.1"}
    )
    typo = next(f for f in got if f.rule == "CFG004")
    assert typo.severity.value == "warning" and "num_generations" in typo.message
    removed = next(f for f in got if f.rule == "CFG001")
    assert removed.severity.value == "error"


def test_a_subclass_read_in_the_repository_knows_its_fields_and_trls(tmp_path):
    got = _found(tmp_path, OWN, {"reward_scale": 2.0, "num_generation": 8})
    assert not any("reward_scale" in f.message for f in got)
    assert any(f.rule == "CFG004" and f.severity.value == "warning" for f in got)


def test_a_non_grpo_trainer_config_is_named_not_grpoconfig(tmp_path):
    got = _found(
        tmp_path, SFT, {"max_prompt_length": 512, "dataset_text_fieldd": "text"}, {**STACK, "trl": "1.7.1"}
    )
    cfg001 = next(f for f in got if f.rule == "CFG001")
    assert cfg001.severity.value == "info" and "SFTConfig" in cfg001.message
    assert "GRPOConfig" not in cfg001.message
    # a typo of a TrainingArguments field is one on every trainer config of TRL's
    lr = _found(tmp_path, None, {"learning_rat": 1e-5}, {**STACK, "trl": "1.7.1"})
    (f,) = [f for f in lr if "learning_rat`" in f.message]
    assert f.severity.value == "warning" and "SFTConfig" in f.message and "GRPOConfig" not in f.message


def test_a_script_that_cannot_be_read_keeps_todays_judgement(tmp_path):
    (tmp_path / "train.py").write_bytes(b"import verifiers as vf\nthis is not python(\n")
    got = _found(tmp_path, None, {"num_iterations": 1}, OLD)
    (f,) = [f for f in got if f.rule == "CFG001"]
    assert f.severity.value == "warning" and "not known to TRL 0.15.2" in f.message


def test_another_packages_class_named_config_is_no_trainer_config(tmp_path):
    # math_verify's LatexExtractionConfig(...) beside a trainer whose args envdoctor cannot place
    (tmp_path / "train.py").write_text(
        "from math_verify import LatexExtractionConfig\nfrom trl import GRPOTrainer\n"
        "cfg = LatexExtractionConfig(boxed_match_priority=0)\n"
        "trainer = GRPOTrainer(model='m', args=make_args())\n"
    )
    assert read_script(tmp_path / "train.py").config_class is None


def test_a_factory_of_the_repositorys_own_package_is_not_another_packages(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "study").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "train.py").write_text(
        "from study.config import create_grpo_config\nfrom trl import GRPOTrainer\n"
        "args = create_grpo_config()\ntrainer = GRPOTrainer(model='m', args=args)\n"
    )
    assert read_script(tmp_path / "train.py").config_class is None


def test_the_dev_sets_scripts_are_placed_each_way():
    # held-out set 8's simple-reward-hacking builds verifiers' config (healthy: quiet); set 5's
    # RedButton thread builds TRL's own GRPOConfig with a key TRL 1.2 lacks (broken: still judged)
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "docs" / "validation"
    vf = next((root / "heldout-2026-11-28h" / "setups").glob("simple-reward-hacking-*")) / "train.py"
    red = next((root / "heldout-2026-11-28e" / "setups").glob("thread-RedButton-6fbe20b*")) / "train.py"
    got = read_script(vf).config_class
    assert got is not None and (got.kind, got.package) == ("foreign", "verifiers")
    got = read_script(red).config_class
    assert got is not None and (got.kind, got.name) == ("trl", "GRPOConfig")


HYDRA = """\
import hydra
from hydra.utils import instantiate


@hydra.main(config_path="cfgs", config_name="train", version_base=None)
def main(cfg):
    trainer = instantiate(cfg.trainer, _recursive_=False)
    trainer.train()


main()
"""


def test_a_hydra_script_builds_the_class_its_target_names_not_trls_by_default(tmp_path):
    """A Hydra run builds its trainer's arguments from the config's `_target_` (SakanaAI/RLT's own
    `GRPOConfig(TrainingArguments)`, held-out set 10): keys TRL 0.14.0 lacks are info naming that,
    not dead keys of TRL's class."""
    (tmp_path / "pyproject.toml").write_text("[project]\\nname = 'x'\\n")
    got = _found(tmp_path, HYDRA, {"sync_ref_model": True}, {**OLD, "trl": "0.14.0"})
    assert got and all(f.severity.value == "info" for f in got)
    assert any("Hydra `_target_`" in f.message for f in got)


def test_a_hydra_config_that_targets_trls_grpoconfig_keeps_todays_judgement(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\\nname = 'x'\\n")
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "trainer.yaml").write_text("args:\\n  _target_: trl.GRPOConfig\\n")
    got = _found(tmp_path, HYDRA, {"sync_ref_model": True}, {**OLD, "trl": "0.14.0"})
    assert any(f.rule == "CFG001" and f.severity.value == "warning" for f in got)


def test_a_batch_trls_config_would_refuse_is_advice_under_a_class_not_read(tmp_path):
    """TRL 0.18+ check the batch in GRPOConfig.__post_init__: a Hydra run builds its own class
    (RLT's GRPOConfig(TrainingArguments)), which runs the check only if it derives from TRL's;
    resting on a class envdoctor could not read, it is advice (issue #35)."""
    (tmp_path / "pyproject.toml").write_text("[project]\\nname = 'x'\\n")
    batch = {"per_device_train_batch_size": 1, "num_generations": 64}
    got = [f for f in _found(tmp_path, HYDRA, batch) if f.rule == "CFG002"]
    assert [f.severity.value for f in got] == ["info"]
    assert "Hydra `_target_`" in got[0].message and "if it derives from TRL's GRPOConfig" in got[0].message
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "t.yaml").write_text("args:\\n  _target_: trl.GRPOConfig\\n")
    got = [f for f in _found(tmp_path, HYDRA, batch) if f.rule == "CFG002"]
    assert [f.severity.value for f in got] == ["error"]  # TRL's own class: TRL refuses
