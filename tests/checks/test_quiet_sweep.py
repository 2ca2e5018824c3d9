"""False alarms on healthy published setups found by the quiet sweep (docs/validation/
quietsweep-2026-11-28.md), each fixed at its mechanism, beside the scenarios that keep firing."""

from __future__ import annotations

from tests.conftest import findings, snapshot

LEGACY = {"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}


def _rule(found, rule):
    return [f for f in found if f.rule == rule]


# --- CFG004: a list is no misspelling of a field that takes one value ------------------------


SCRIPT = """from dataclasses import dataclass
from trl import GRPOConfig, GRPOTrainer, ModelConfig, ScriptArguments, TrlParser


@dataclass
class GRPOScriptArguments(ScriptArguments):
    reward_funcs: list = None


parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
script_args, training_args, model_args = parser.parse_args_and_config()
"""


def test_cfg004_list_valued_plural_of_a_string_field_is_not_a_typo(tmp_path):
    # open-r1 forks' recipes (hanyin88/DRG-Sapphire 0f0adc2 recipes/grpo_config.yaml,
    # SILX-LABS/open-quasar2 75f359e, Qsingle/open-medical-r1 8f33002) carry the
    # alignment-handbook's `dataset_configs: [default]`; TRL's ScriptArguments.dataset_config is
    # Optional[str]: renaming it would hand load_dataset a list
    (tmp_path / "grpo.py").write_text(SCRIPT)
    found = findings(
        snapshot(2, packages=LEGACY),
        config={"dataset_name": "open-r1/OpenR1-Math-220k", "dataset_configs": ["default"]},
        launch=f"accelerate launch --num_processes 2 {tmp_path / 'grpo.py'}",
    )
    typo = [f for f in _rule(found, "CFG004") if f.severity.value != "info"]
    assert not typo
    (said,) = [f for f in _rule(found, "CFG004") if "dataset_configs" in f.message]
    assert said.severity.value == "info"


def test_cfg004_a_misspelt_key_with_a_value_of_its_shape_still_warns(tmp_path):
    (tmp_path / "grpo.py").write_text(SCRIPT)
    launch = f"accelerate launch --num_processes 2 {tmp_path / 'grpo.py'}"
    found = findings(snapshot(2, packages=LEGACY), config={"dataset_configs": "default"}, launch=launch)
    (f,) = [f for f in _rule(found, "CFG004") if "dataset_configs" in f.message]
    assert f.severity.value == "warning" and f.evidence["suggestion"] == "dataset_config"
    # a list for a list field, misspelt: still a typo (lora_target_modules takes a list)
    found = findings(snapshot(2, packages=LEGACY), config={"lora_target_module": ["q_proj", "v_proj"]})
    (f,) = [f for f in _rule(found, "CFG004") if "lora_target_module" in f.message]
    assert f.severity.value == "warning" and f.evidence["suggestion"] == "lora_target_modules"
    # a list for a GRPOConfig field whose default is a number
    found = findings(snapshot(2), config={"num_generation": [8]})
    assert not [f for f in _rule(found, "CFG004") if f.severity.value != "info"]


# --- LAY006: a GPU shared with vLLM on purpose ------------------------------------------------


def test_lay006_legacy_vllm_device_with_a_small_share_is_info():
    # Karthik-Dulam/nano-zero 36e795b grpo.py: vllm_device="cuda:0" with
    # vllm_gpu_memory_utilization=0.2 beside the trainer on the same GPU (TRL 0.15 only warns
    # "also being used for training"); colocate mode shares a GPU the same way at 0.3
    config = {"use_vllm": True, "vllm_device": "cuda:0", "vllm_gpu_memory_utilization": 0.2}
    found = findings(
        snapshot(2, packages=LEGACY), config=config, launch="accelerate launch --num_processes 2 train.py"
    )
    (f,) = _rule(found, "LAY006")
    assert f.severity.value == "info" and "0.2" in f.message


def test_lay006_legacy_default_share_stays_an_error():
    config = {"use_vllm": True, "vllm_device": "cuda:0"}  # TRL's default 0.9
    found = findings(
        snapshot(2, packages=LEGACY), config=config, launch="accelerate launch --num_processes 2 train.py"
    )
    (f,) = _rule(found, "LAY006")
    assert f.severity.value == "error"
    # lowered from 0.9 on purpose: training has 30 %, which holds a small model (a 0.5B LoRA run of
    # held-out set 19 trained at 0.6): without the model's size that is likely, not certain, to fail
    config["vllm_gpu_memory_utilization"] = 0.7
    found = findings(
        snapshot(2, packages=LEGACY), config=config, launch="accelerate launch --num_processes 2 train.py"
    )
    assert _rule(found, "LAY006")[0].severity.value == "warning"


def test_lay006_server_line_with_a_small_share_is_info_and_its_default_an_error():
    server = {"use_vllm": True, "vllm_mode": "server"}
    packages = {"trl": "0.19.0", "vllm": "0.8.5", "torch": "2.6.0", "transformers": "4.52.4"}
    both = (
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m{} ; "
        "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"
    )
    small = both.format(" --gpu_memory_utilization 0.3")
    found = findings(snapshot(2, packages=packages), config=server, launch=small)
    assert _rule(found, "LAY006")[0].severity.value == "info"
    found = findings(snapshot(2, packages=packages), config=server, launch=both.format(""))
    assert _rule(found, "LAY006")[0].severity.value == "error"


# --- CFG001: a removed key on the command line of a script that was not read -----------------

MODERN_18 = {"trl": "0.23.1", "vllm": "0.10.2", "torch": "2.8.0", "transformers": "4.56.1"}


def test_cfg001_command_line_key_of_an_unread_script_is_info(tmp_path):
    # hustvl/Food-R1 2d7f1e5 scripts/train_grpo_caloriebench80k.sh: `torchrun swift/cli/rlhf.py
    # ... --vllm_max_model_len 8192` runs ms-swift's CLI from its own checkout (SWIFT_ROOT), whose
    # parser takes vllm_max_model_len; envdoctor cannot read that script
    # (scope15: swift/cli/rlhf.py is ms-swift's own entry point, rules/knowledge/frameworks.yaml:
    # its flags are not GRPOConfig's, CFG001 stays quiet and ENV002 says so; another script that
    # is not here keeps the info)
    launch = "torchrun --nproc_per_node 2 swift/cli/rlhf.py --rlhf_type grpo --vllm_max_model_len 8192"
    found = findings(snapshot(2, packages=MODERN_18), config={"use_vllm": True}, launch=launch)
    assert not _rule(found, "CFG001") and _rule(found, "ENV002")
    launch = "torchrun --nproc_per_node 2 tools/cli/rlhf.py --rlhf_type grpo --vllm_max_model_len 8192"
    found = findings(snapshot(2, packages=MODERN_18), config={"use_vllm": True}, launch=launch)
    (f,) = [f for f in _rule(found, "CFG001") if f.evidence["key"] == "vllm_max_model_len"]
    assert f.severity.value == "info" and "is not here" in f.message


def test_cfg001_command_line_key_of_a_read_script_or_a_config_file_stays_an_error(tmp_path):
    (tmp_path / "grpo.py").write_text(SCRIPT)
    launch = f"torchrun --nproc_per_node 2 {tmp_path / 'grpo.py'} --vllm_max_model_len 8192"
    found = findings(snapshot(2, packages=MODERN_18), config={"use_vllm": True}, launch=launch)
    (f,) = [f for f in _rule(found, "CFG001") if f.evidence["key"] == "vllm_max_model_len"]
    assert f.severity.value == "error"
    # a config file's key, the script unread: as before (TRL's recipe format)
    config = {"use_vllm": True, "vllm_max_model_len": 8192}
    found = findings(snapshot(2, packages=MODERN_18), config=config, launch="torchrun missing.py")
    (f,) = [f for f in _rule(found, "CFG001") if f.evidence["key"] == "vllm_max_model_len"]
    assert f.severity.value == "error"


# --- KNF001: one finding per bug, at its real fixed release ----------------------------------


def _importance(found):
    return [f for f in _rule(found, "KNF001") if "importance" in f.message]


def test_knf001_server_raw_logprobs_fixed_in_0_27_1_said_once():
    # trl vllm-serve passes logprobs_mode="processed_logprobs" from v0.27.1 (trl/scripts/
    # vllm_serve.py#L364; huggingface/trl#4873); the catalogue held this bug twice, once with
    # 0.28.0 as its fix: HuiResearch/ReasoningIE on TRL 0.25.1 got two warnings for one bug
    config = {"use_vllm": True, "vllm_mode": "server", "temperature": 0.7}
    packages = {"trl": "0.25.1", "vllm": "0.10.2", "torch": "2.8.0", "transformers": "4.57.1"}
    assert len(_importance(findings(snapshot(2, packages=packages), config=config))) == 1
    packages["trl"] = "0.27.1"
    packages["vllm"] = "0.12.0"
    assert _importance(findings(snapshot(2, packages=packages), config=config)) == []


def test_knf001_trl_0_23_colocate_logprobs_said_once():
    config = {"use_vllm": True, "vllm_mode": "colocate", "temperature": 0.9}
    packages = {"trl": "0.23.1", "vllm": "0.10.2", "torch": "2.8.0", "transformers": "4.56.1"}
    assert len(_importance(findings(snapshot(2, packages=packages), config=config))) == 1


# --- PKG006: a development build of TRL between two lines ------------------------------------


def test_pkg006_dev_build_inside_the_previous_lines_range_is_info():
    # MAOJIASONG/TinyZero-TRL dd318ba requirement.txt: trl @ git+…@e751a16 (main, 2025-03-31,
    # __version__ 0.17.0.dev0, setup.py extra vllm>=0.7.0) with vLLM 0.7.2; TRL 0.17.0 asks >=0.8.3
    packages = {"trl": "0.17.0.dev0", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}
    (f,) = _rule(findings(snapshot(2, packages=packages), config={"use_vllm": True}), "PKG006")
    assert f.severity.value == "info" and "development build" in f.message


def test_pkg006_release_or_dev_build_outside_both_ranges_stays_a_warning():
    packages = {"trl": "0.17.0", "vllm": "0.8.0", "torch": "2.6.0", "transformers": "4.51.3"}
    (f,) = _rule(findings(snapshot(2, packages=packages), config={"use_vllm": True}), "PKG006")
    assert f.severity.value == "warning"
    # a 0.19 development build with a vLLM below 0.18's range too
    packages = {"trl": "0.19.0.dev0", "vllm": "0.8.0", "torch": "2.6.0", "transformers": "4.51.3"}
    found = _rule(findings(snapshot(2, packages=packages), config={"use_vllm": True}), "PKG006")
    assert [f.severity.value for f in found] == ["warning"]
