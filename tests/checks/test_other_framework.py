"""A run whose trainer is not TRL's GRPOTrainer (verl, EasyR1, OpenRLHF, ROLL, NeMo-RL, slime,
AReaL, SkyRL, prime-rl, RL2, LLaMA-Factory) or whose arguments are a framework's own though TRL runs
underneath (ms-swift): TRL's config-key, layout and trainer rules stay quiet on its healthy setup,
ENV002 says once which framework trains and what was left out; the rules of what the run uses
whatever trains it (packages, vLLM's memory, the allocator) still fire; TRL's own shapes are
unchanged. Issue 35 (scope15)."""

from __future__ import annotations

import shlex

import pytest

from envdoctor.plan.build import build_plan
from tests.conftest import MODERN, findings, snapshot

SNAP = snapshot(8, packages=MODERN)
VERL_CFG = {"data": {"max_prompt_length": 1024, "train_batch_size": 1024}, "trainer": {"n_gpus_per_node": 8}}

# framework key -> (launch line, config or None)
SHAPES = {
    "verl": (
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.max_prompt_length=1024 "
        "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=5 trainer.n_gpus_per_node=8",
        None,
    ),
    "verl-config": ("python3 -m verl.trainer.main_ppo --config-name ppo_trainer", VERL_CFG),
    "easyr1": ("python3 -m verl.trainer.main config=examples/config.yaml data.max_prompt_length=2048", None),
    "openrlhf": (
        "ray job submit --address=http://127.0.0.1:8265 -- python3 -m openrlhf.cli.train_ppo_ray "
        "--pretrain Qwen/Qwen2.5-7B-Instruct --vllm_num_engines 2 --prompt_max_len 1024 "
        "--advantage_estimator group_norm --n_samples_per_prompt 8",
        None,
    ),
    "roll": (
        "python examples/start_rlvr_pipeline.py --config_path qwen2.5-7B-rlvr_megatron "
        "--config_name rlvr_config",
        None,
    ),
    "nemo-rl": ("uv run python examples/run_grpo_math.py --config examples/configs/grpo_math_1B.yaml", None),
    "areal": (
        "python3 -m areal.launcher.local examples/math/gsm8k_grpo.py --config examples/math/gsm8k_grpo.yaml",
        None,
    ),
    "skyrl": (
        "uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base trainer.epochs=20 "
        "generator.backend=vllm trainer.placement.colocate_all=true",
        None,
    ),
    "prime-rl": ("uv run rl @ examples/reverse_text/rl.toml --output-dir outputs/run1", None),
    "rl2": ("torchrun --nproc_per_node=8 -m RL2.trainer.ppo actor.model_name=Qwen/Qwen3-1.7B", None),
    "llamafactory": (
        "llamafactory-cli train examples/train_lora/llama3_lora_ppo.yaml",
        {
            "stage": "ppo",
            "model_name_or_path": "meta-llama/Meta-Llama-3-8B-Instruct",
            "finetuning_type": "lora",
        },
    ),
    "ms-swift": (
        "NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct "
        "--dataset AI-MO/NuminaMath-TIR --use_vllm true --vllm_mode colocate --num_generations 8 "
        "--train_type lora --deepspeed zero2",
        None,
    ),
}


def _said(found):
    return [(f.rule, f.severity.value) for f in found if f.severity.value != "info"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_healthy_run_of_another_framework_gets_no_warning(shape):
    launch, config = SHAPES[shape]
    found = findings(SNAP, config=config, launch=launch)
    assert _said(found) == [], [f.message for f in found]
    (env,) = [f for f in found if f.rule == "ENV002"]
    assert env.severity.value == "info"


def test_the_plan_names_the_framework_and_its_evidence():
    plan = build_plan(launch=SHAPES["verl"][0], live=False)
    assert plan.framework.key == "verl" and "verl.trainer.main_ppo" in plan.framework.evidence
    assert build_plan(launch=SHAPES["easyr1"][0], live=False).framework.key == "easyr1"  # longest module
    swift = build_plan(launch=SHAPES["ms-swift"][0], live=False).framework
    assert swift.key == "ms-swift" and swift.runs_trl and not swift.trl_keys
    assert (
        build_plan(launch=SHAPES["prime-rl"][0], live=False).framework.key == "prime-rl"
    )  # its `rl` console


def test_the_verl_run_was_the_false_alarm_before():
    """What the class was: CFG004 on verl's keys, LAY003 (TRL's nn.DataParallel) on its launch;
    with --select they still run, so the user can ask for them."""
    launch, config = SHAPES["verl-config"]
    found = findings(SNAP, config=config, launch=launch)
    assert not {"CFG004", "LAY003"} & {f.rule for f in found}
    env = next(f for f in found if f.rule == "ENV002")
    assert "verl trains this run" in env.message and "config-key" in env.message
    assert "process-layout" in env.message


def test_a_script_importing_a_framework_and_building_no_grpotrainer_is_that_framework(tmp_path):
    (tmp_path / "train.py").write_text(
        "from slime.utils.arguments import parse_args\n"
        "from slime.ray.placement_group import create_placement_groups\n"
        "args = parse_args()\n"
    )
    found = findings(SNAP, launch=f"python {tmp_path / 'train.py'} --actor-num-gpus-per-node 8")
    assert _said(found) == []
    env = next(f for f in found if f.rule == "ENV002")
    assert "slime" in env.message and "train.py:1 imports slime" in env.message


TRL_SCRIPT = (
    "from trl import GRPOConfig, GRPOTrainer\n{extra}\n"
    "trainer = GRPOTrainer(model=model, reward_funcs=[], args=GRPOConfig(output_dir='o'))\n"
)


def test_a_trl_script_is_judged_as_before(tmp_path):
    """python train.py on 8 visible GPUs building a model object: LAY003 as always, no ENV002."""
    (tmp_path / "train.py").write_text(TRL_SCRIPT.format(extra="model = load()"))
    found = findings(
        SNAP, config={"per_device_train_batch_size": 8}, launch=f"python {tmp_path / 'train.py'}"
    )
    rules = {f.rule for f in found}
    assert "LAY003" in rules and "ENV002" not in rules


def test_a_trl_script_that_imports_verl_helpers_is_still_trl(tmp_path):
    (tmp_path / "train.py").write_text(
        TRL_SCRIPT.format(extra="from verl.utils.reward_score import gsm8k\nmodel = load()")
    )
    found = findings(
        SNAP, config={"per_device_train_batch_size": 8}, launch=f"python {tmp_path / 'train.py'}"
    )
    assert "LAY003" in {f.rule for f in found} and "ENV002" not in {f.rule for f in found}


def test_an_unknown_launch_is_trl_as_today():
    found = findings(
        SNAP, config={"max_prompt_lenght": 512}, launch="accelerate launch --num_processes 8 train.py"
    )
    assert "CFG004" in {f.rule for f in found} and "ENV002" not in {f.rule for f in found}


def test_ms_swift_flags_are_quiet_and_its_packages_still_judged():
    """ms-swift's own flags (`--dataset`, `--train_type`) are no GRPOConfig typos; TRL runs under
    it, so TRL with a vLLM outside TRL's range is still said (PKG006), and vLLM built for another
    torch still fails (PKG004)."""
    launch = SHAPES["ms-swift"][0]
    healthy = findings(SNAP, launch=launch)
    assert not {"CFG001", "CFG004"} & {f.rule for f in healthy}
    off = snapshot(8, packages={**MODERN, "vllm": "0.7.2"})
    rules = {f.rule for f in findings(off, launch=launch)}
    assert {"PKG004", "PKG006"} <= rules, rules


def test_verl_leaves_trl_range_out_but_keeps_vllm_and_torch_and_the_allocator():
    """verl drives vLLM itself: TRL's vLLM range (PKG006) is not its premise; vLLM built for
    another torch (PKG004) and a broken PYTORCH_CUDA_ALLOC_CONF (ALC001) fail whatever trains."""
    off = snapshot(
        8, packages={**MODERN, "vllm": "0.7.2"}, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}
    )
    rules = {f.rule for f in findings(off, launch=SHAPES["verl"][0])}
    assert "PKG006" not in rules and {"PKG004", "ALC001"} <= rules, rules


def test_a_shell_script_the_line_runs_is_read_for_the_framework(tmp_path, monkeypatch):
    """`bash scripts/train.sh` whose line is `swift rlhf …` (MM-GRPO's shape): ms-swift, said
    with the script's line; its flags in the config are not GRPOConfig typos."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.sh").write_text(
        "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1,2,3,4,5\nNPROC_PER_NODE=6 \\\nswift rlhf \\\n"
        "    --rlhf_type grpo \\\n    --dataset data.jsonl\n"
    )
    monkeypatch.chdir(tmp_path)
    plan = build_plan(launch="bash scripts/train.sh", live=False)
    assert plan.framework.key == "ms-swift" and plan.framework.evidence.startswith("scripts/train.sh:")
    found = findings(
        SNAP, config={"dataset": "data.jsonl", "train_type": "lora"}, launch="bash scripts/train.sh"
    )
    assert not {"CFG001", "CFG004"} & {f.rule for f in found}


def test_a_package_script_found_through_its_install_path():
    """`torchrun … $(python -c "import swift; print(swift.__path__[0])")/cli/rlhf.py`: swift's
    own cli/rlhf.py."""
    line = (
        'torchrun --nproc_per_node=8 $(uv run python -c "import swift; print(swift.__path__[0])")'
        "/cli/rlhf.py --rlhf_type grpo --train_type lora"
    )
    argv = shlex.split(line)  # as the shell hands `check … -- <line>` its words
    assert build_plan(launch_argv=argv, live=False).framework.key == "ms-swift"


def test_a_shell_script_of_a_trl_run_is_trl():
    assert build_plan(launch="bash no_such_script.sh", live=False).framework is None


def test_a_verl_recipe_module_is_known_by_its_config_tree():
    """verl's recipes are modules of their own (`python3 -m recipe.dapo.src.main_dapo`, verl's
    recipe/dapo/run_dapo_qwen2.5_32b.sh) that take verl's Hydra overrides: verl, not a TRL script
    whose one process sees 8 GPUs (LAY003 was the false error); a TRL run's keys are no override."""
    launch = (
        "ray job submit --no-wait -- python3 -m recipe.dapo.src.main_dapo data.train_batch_size=512 "
        "actor_rollout_ref.rollout.n=16 +actor_rollout_ref.model.override_config.attention_dropout=0. "
        "algorithm.adv_estimator=grpo trainer.n_gpus_per_node=8"
    )
    plan = build_plan(launch=launch, live=False)
    assert plan.framework.key == "verl" and "actor_rollout_ref" in plan.framework.evidence
    found = findings(SNAP, launch=launch)
    assert _said(found) == [] and "ENV002" in {f.rule for f in found}
    assert build_plan(launch="python train.py trainer.n_gpus_per_node=8", live=False).framework is None


SUBMIT = (
    "import sagemaker\nfrom sagemaker.pytorch import PyTorch\n"
    "est = PyTorch(entry_point='entrypoints/launcher.py', instance_type='ml.p4de.24xlarge',\n"
    "              instance_count=1)\n"
    "est.fit()\n"
)


def test_a_script_that_submits_a_sagemaker_job_has_no_local_layout(tmp_path):
    """Set 16's rlvr-experiments (not held out): `python submit.py` on an 8-GPU machine submits the
    job; LAY003 (DataParallel over this machine's GPUs) judged a process that never trains here."""
    (tmp_path / "submit.py").write_text(SUBMIT)
    found = findings(SNAP, launch=f"python {tmp_path / 'submit.py'} cfg.yaml --instance-count 1")
    assert "LAY003" not in {f.rule for f in found}
    env = next(f for f in found if f.rule == "ENV002")
    assert "SageMaker" in env.message and "imports sagemaker" in env.message


def test_a_trl_script_that_imports_sagemaker_is_still_trl(tmp_path):
    (tmp_path / "train.py").write_text(TRL_SCRIPT.format(extra="import sagemaker\nmodel = load()"))
    found = findings(
        SNAP, config={"per_device_train_batch_size": 8}, launch=f"python {tmp_path / 'train.py'}"
    )
    assert "LAY003" in {f.rule for f in found} and "ENV002" not in {f.rule for f in found}
