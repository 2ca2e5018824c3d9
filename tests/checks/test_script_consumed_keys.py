"""Keys the training script consumes itself are its own, not GRPOConfig typos (CFG004): a keyword
its code hands Unsloth's loaders (``get_peft_model(use_gradient_checkpointing="unsloth")``,
``from_pretrained(gpu_memory_utilization=…)``), or a key it reads from the config file it loads
itself (``cfg["gpu_memory_utilization"]``). Where the config goes to TRL's parser (TrlParser /
HfArgumentParser) the parser still refuses a key no dataclass declares, and CFG004 still says so.

Issue 35, held-out set 17: thread-GRPODx-0af1a61 / -0ecf6a5 (Legionof7/GRPOdx, medical_grpo.py
passes ``gpu_memory_utilization=0.7`` to FastLanguageModel.from_pretrained and
``use_gradient_checkpointing="unsloth"`` to get_peft_model) drew two false CFG004 warnings each."""

from __future__ import annotations

from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

STACK = {"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}

#: the shape of GRPOdx's medical_grpo.py (0af1a61): Unsloth loads the model, GRPOConfig in code
UNSLOTH = """\
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="unsloth/Phi-4",
    max_seq_length=2048,
    load_in_4bit=True,
    fast_inference=True,
    gpu_memory_utilization=0.7,
)
model = FastLanguageModel.get_peft_model(
    model,
    r=8,
    use_gradient_checkpointing="unsloth",
)
args = GRPOConfig(output_dir="o", num_generations=2, per_device_train_batch_size=2)
GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[], args=args).train()
"""

#: a script that loads its YAML itself and reads the loader's keys from it
SELF_LOAD = """\
import yaml
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

with open("config.yaml") as f:
    cfg = yaml.safe_load(f)
model, tok = FastLanguageModel.from_pretrained(
    cfg["model_name"], gpu_memory_utilization=cfg["gpu_util"], load_in_4bit=True
)
model = FastLanguageModel.get_peft_model(model, r=cfg.get("lora_rank", 16))
args = GRPOConfig(output_dir="o", learning_rate=cfg["learning_rate"])
GRPOTrainer(model=model, processing_class=tok, reward_funcs=[], args=args).train()
"""

#: the same keys, but the config goes to TRL's parser
TRL_PARSER = """\
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer, ModelConfig, ScriptArguments, TrlParser

script_args, training_args, model_args = TrlParser(
    (ScriptArguments, GRPOConfig, ModelConfig)
).parse_args_and_config()
model, tok = FastLanguageModel.from_pretrained("m", gpu_memory_utilization=0.7)
model = FastLanguageModel.get_peft_model(model, use_gradient_checkpointing="unsloth")
GRPOTrainer(model=model, processing_class=tok, reward_funcs=[], args=training_args).train()
"""


def _cfg004(tmp_path, source: str, config: dict) -> list:
    script = tmp_path / "train.py"
    script.write_text(source)
    got = findings(
        snapshot(1, packages=STACK), config=config, launch=f"python {script} --config {tmp_path / 'c.yaml'}"
    )
    return [f for f in got if f.rule == "CFG004" and f.severity.value != "info"]


def test_the_reader_names_the_keywords_of_the_scripts_other_consumers(tmp_path):
    (tmp_path / "train.py").write_text(UNSLOTH)
    consumed = read_script(tmp_path / "train.py").consumed
    assert "from_pretrained" in consumed["gpu_memory_utilization"]
    assert "get_peft_model" in consumed["use_gradient_checkpointing"]
    assert "num_generations" not in consumed  # GRPOConfig's keyword: TRL's, judged as such


def test_unsloth_loader_keywords_in_the_config_are_no_typos(tmp_path):
    config = {"use_gradient_checkpointing": "unsloth", "gpu_memory_utilization": 0.7, "use_vllm": True}
    assert _cfg004(tmp_path, UNSLOTH, config) == []


def test_a_typo_the_script_consumes_nowhere_is_still_said(tmp_path):
    (f,) = _cfg004(tmp_path, UNSLOTH, {"gradient_checkpointng": True})
    assert "gradient_checkpointing" in f.message


def test_keys_the_script_reads_from_the_config_it_loads_are_its_own(tmp_path):
    (tmp_path / "train.py").write_text(SELF_LOAD)
    consumed = read_script(tmp_path / "train.py").consumed
    assert "config it loads itself" in consumed["gpu_util"] and "lora_rank" in consumed
    config = {"gpu_util": 0.5, "lora_rank": 16, "learning_rate": 1e-6, "use_gradient_checkpointing": True}
    # use_gradient_checkpointing: neither read from the config nor a keyword of the script's
    (f,) = _cfg004(tmp_path, SELF_LOAD, config)
    assert "use_gradient_checkpointing" in f.message


def test_where_trls_parser_reads_the_config_the_typo_is_still_said(tmp_path):
    got = _cfg004(tmp_path, TRL_PARSER, {"use_gradient_checkpointing": "unsloth"})
    assert got and "use_gradient_checkpointing" in got[0].message


#: held-out set 15 (thread-Qwen-2.5-1.5B-GRPO-4f61974, broken): the script loads its YAML and
#: hands GRPOConfig cfg["max_prompt_length"], which TRL 1.6 refuses; toolaceqwen (healthy) opens
#: files with mode="r" beside a config whose `model` section is its own
PASSED_ON = """\
import yaml
from trl import GRPOConfig, GRPOTrainer

with open("config.yaml", mode="r") as f:
    cfg = yaml.safe_load(f)
args = GRPOConfig(output_dir="o", max_prompt_length=cfg["max_prompt_length"])
GRPOTrainer(model=cfg["model_path"], reward_funcs=[], args=args).train()
"""


def test_a_key_the_script_reads_and_hands_grpoconfig_is_still_judged_as_grpoconfigs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PASSED_ON)
    got = findings(
        snapshot(1, packages={**STACK, "trl": "1.6.0", "transformers": "4.57.1"}),
        config={"max_prompt_length": 512, "model_path": "m"},
        launch=f"python {script}",
    )
    assert [f for f in got if f.rule == "CFG001" and f.severity.value == "error"]


def test_the_scripts_own_keywords_are_no_suggestions_for_a_typo(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PASSED_ON)
    got = findings(snapshot(1, packages=STACK), config={"model": {"name": "m"}}, launch=f"python {script}")
    assert not [f for f in got if f.rule == "CFG004" and "`mode`" in f.message]


#: the config handed to GRPOConfig whole (or a section of it): a key another call of the script
#: also takes (get_peft_model's use_gradient_checkpointing) reaches GRPOConfig too, a TypeError
SPREAD = """\
import yaml
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

with open("config.yaml") as f:
    cfg = yaml.safe_load(f)
model, tok = FastLanguageModel.from_pretrained("m", max_seq_length=1024)
model = FastLanguageModel.get_peft_model(model, r=16, use_gradient_checkpointing="unsloth")
args = GRPOConfig(**SPREAD_OF)
GRPOTrainer(model=model, processing_class=tok, reward_funcs=[], args=args).train()
"""


def test_a_key_the_script_spreads_into_grpoconfig_is_still_a_typo(tmp_path):
    whole = SPREAD.replace("SPREAD_OF", "cfg")
    (f,) = _cfg004(tmp_path, whole, {"output_dir": "o", "use_gradient_checkpointing": True})
    assert "use_gradient_checkpointing" in f.message and "gradient_checkpointing`?" in f.message
    section = SPREAD.replace("SPREAD_OF", 'cfg["grpo"]')
    config = {"model": {"name": "m"}, "grpo": {"output_dir": "o", "use_gradient_checkpointing": True}}
    (f,) = _cfg004(tmp_path, section, config)
    assert "grpo.use_gradient_checkpointing" in f.message


#: held-out set 22 (thread-continual-grpo-eb565ef): the script reads its YAML through a helper of
#: its package (``from .common import load_config``) and names each key it reads
#: (``cfg.get("per_device_batch_size")``, ``cfg.get("use_lora")``); where that helper is not read
#: (a relative import envdoctor cannot place) the keys were told as GRPOConfig typos and ``fix``
#: renamed them to `per_device_eval_batch_size` / `use_rslora`, which the script never reads
HELPER_LOAD = """\
import argparse
from trl import GRPOConfig, GRPOTrainer
from .common import load_config

def run(path):
    cfg = load_config(path)
    args = GRPOConfig(
        output_dir="o",
        per_device_train_batch_size=int(cfg.get("per_device_batch_size", 1)),
        beta=float(cfg.get("kl_beta", 0.04)),
    )
    peft = None
    if cfg.get("use_lora", True):
        peft = object()
    GRPOTrainer(model=cfg["model"], reward_funcs=[], args=args, peft_config=peft).train()

parser = argparse.ArgumentParser()
parser.add_argument("--config", required=True)
run(parser.parse_args().config)
"""


def test_keys_the_script_reads_by_name_from_a_helpers_mapping_are_its_own(tmp_path):
    config = {"per_device_batch_size": 2, "use_lora": True, "kl_beta": 0.04, "model": "m"}
    assert _cfg004(tmp_path, HELPER_LOAD, config) == []
    # a key the script reads nowhere is still a typo of GRPOConfig's
    (f,) = _cfg004(tmp_path, HELPER_LOAD, {**config, "gradient_checkpointng": True})
    assert "gradient_checkpointing" in f.message


#: set 22's countdown_post_train (healthy, 480 steps): the script loads its YAML itself and builds
#: GRPOConfig through an alias from a dict (``config_cls(**kwargs)``) with num_generations taken
#: from the file's group_size; the file names generation_batch_size: 20. TRL's default
#: num_generations (8) is not the run's: CFG002 said "20 is not divisible by 8" (a false error)
ALIASED = """\
import yaml
from trl import GRPOConfig, GRPOTrainer

def build(cfg):
    config_cls = GRPOConfig
    kwargs = {
        "output_dir": "o",
        "num_generations": int(cfg["group_size"]),
        "generation_batch_size": int(cfg["generation_batch_size"]),
    }
    return config_cls(**kwargs)

with open("c.yaml") as f:
    cfg = yaml.safe_load(f)
GRPOTrainer(model="m", reward_funcs=[], args=build(cfg)).train()
"""

#: the same values handed to GRPOConfig with keywords: read, judged
KEYWORDS = ALIASED.replace(
    "    config_cls = GRPOConfig\n    kwargs = {\n"
    '        "output_dir": "o",\n        "num_generations": int(cfg["group_size"]),\n'
    '        "generation_batch_size": int(cfg["generation_batch_size"]),\n    }\n'
    "    return config_cls(**kwargs)\n",
    '    return GRPOConfig(output_dir="o", generation_batch_size=int(cfg["generation_batch_size"]))\n',
)


def _cfg002(tmp_path, source: str, config: dict) -> list:
    script = tmp_path / "train.py"
    script.write_text(source)
    got = findings(
        snapshot(1, packages={**STACK, "trl": "1.6.0", "transformers": "4.57.1", "vllm": "0.12.0"}),
        config=config,
        launch=f"python {script} --config {tmp_path / 'c.yaml'}",
    )
    return [f for f in got if f.rule == "CFG002"]


def test_a_config_built_in_a_call_envdoctor_does_not_read_leaves_the_batch_unjudged(tmp_path):
    (f,) = _cfg002(tmp_path, ALIASED, {"group_size": 5, "generation_batch_size": 20})
    assert f.severity.value == "info" and "not judged" in f.message and "num_generations" in f.message
    # GRPOConfig(...) with keywords is read: num_generations is TRL's default there, 20 % 8 fails
    (f,) = _cfg002(tmp_path, KEYWORDS, {"group_size": 5, "generation_batch_size": 20})
    assert f.severity.value == "error" and "(8)" in f.message
