"""Resolving who runs where, for each launcher and TRL era."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import knowledge
from envdoctor.plan.build import build_plan
from envdoctor.plan.layout import resolve_layout
from tests.conftest import LEGACY, MODERN, snapshot


def layout(
    launch,
    config=None,
    n=8,
    packages=None,
    env=None,
    processes=None,
    gpus=None,
    accelerate=None,
    tmp_path=None,
):
    facts = from_dict(snapshot(n, packages=packages or MODERN, env=env, processes=processes, gpus=gpus), "t")
    plan = build_plan(launch=launch, config_dict=config, live=False)
    if accelerate is not None:
        plan.accelerate = accelerate
    return resolve_layout(facts, plan, knowledge())


def test_accelerate_gpu_ids_replace_visible_devices():
    lay = layout("CUDA_VISIBLE_DEVICES=1 accelerate launch --num_processes 2 --gpu_ids 4,6 t.py")
    assert [r.gpu for r in lay.ranks] == [4, 6] and lay.visible == [4, 6]


def test_accelerate_without_num_processes_uses_every_visible_gpu():
    lay = layout("CUDA_VISIBLE_DEVICES=0,1,2 accelerate launch t.py")
    assert lay.num_processes == 3 and lay.problems["distributed"]


def test_accelerate_config_file_values_and_multi_node():
    lay = layout(
        "accelerate launch --machine_rank 1 t.py",
        accelerate={
            "num_processes": 16,
            "num_machines": 2,
            "gpu_ids": "all",
            "distributed_type": "MULTI_GPU",
        },
    )
    assert lay.num_processes == 8 and lay.world_size == 16
    assert [r.rank for r in lay.ranks][:2] == [8, 9]


def test_torchrun_multi_node_and_gpu_keyword():
    lay = layout("torchrun --nnodes 2 --node_rank 1 --nproc_per_node gpu t.py", n=4)
    assert lay.num_processes == 4 and lay.world_size == 8 and lay.ranks[0].rank == 4


def test_deepspeed_include():
    lay = layout("deepspeed --include localhost:2,3 t.py")
    assert [r.gpu for r in lay.ranks] == [2, 3]


def test_plain_python_is_one_process_seeing_all():
    lay = layout("python t.py", n=3)
    assert lay.process_gpus == 3 and not lay.problems["distributed"]


def test_legacy_auto_is_first_gpu_after_training_ranks():
    lay = layout(
        "accelerate launch --num_processes 4 --gpu_ids 0,2,3,4,5 t.py",
        config={"use_vllm": True, "vllm_device": "auto"},
        packages=LEGACY,
    )
    assert lay.generation_mode == "legacy" and lay.generation == [5]
    assert lay.vllm_device_resolved == "cuda:4"


def test_server_from_launch_line_and_from_nvml():
    lay = layout(
        "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch --num_processes 6 t.py ; "
        "CUDA_VISIBLE_DEVICES=6,7 trl vllm-serve --model m --data_parallel_size 2",
        config={"use_vllm": True, "vllm_mode": "server"},
    )
    assert lay.generation == [6, 7] and lay.server.data_parallel_size == 2
    running = {7: [{"pid": 99, "name": "python trl vllm-serve --model m --port 8005", "used_mib": 60000}]}
    lay2 = layout(
        "CUDA_VISIBLE_DEVICES=0 python t.py",
        config={"use_vllm": True, "vllm_mode": "server"},
        processes=running,
    )
    assert lay2.server.source == "nvml" and lay2.generation == [7] and lay2.server.port == 8005


def test_server_from_nvml_by_vllm_engine_process_name():
    """vLLM V1's engine renames itself VLLM::EngineCore; it alone holds the GPU memory."""
    running = {6: [{"pid": 42, "name": "VLLM::EngineCore", "used_mib": 60000}]}
    lay = layout(
        "CUDA_VISIBLE_DEVICES=0 python t.py",
        config={"use_vllm": True, "vllm_mode": "server"},
        processes=running,
    )
    assert lay.server.source == "nvml" and lay.server.pid == 42 and lay.generation == [6]


def test_modern_default_mode_is_colocate_and_legacy_key_inference_without_trl():
    lay = layout("torchrun --nproc_per_node 2 t.py", config={"use_vllm": True})
    assert lay.generation_mode == "colocate" and lay.generation == [0, 1]
    lay = layout(
        "torchrun --nproc_per_node 2 t.py",
        config={"use_vllm": True, "vllm_device": "auto"},
        packages={"torch": "2.5.1"},
    )
    assert lay.generation_mode == "legacy"


def test_trl_018_to_099_default_is_server():
    lay = layout(
        "torchrun --nproc_per_node 2 t.py", config={"use_vllm": True}, packages={**MODERN, "trl": "0.19.0"}
    )
    assert lay.generation_mode == "server"


def test_config_env_section_applies_to_the_trainer(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("env:\n  CUDA_VISIBLE_DEVICES: '2,3'\nnum_generations: 4\n")
    facts = from_dict(snapshot(4), "t")
    plan = build_plan(config=str(cfg), launch="torchrun --nproc_per_node 2 t.py", live=False)
    assert [r.gpu for r in resolve_layout(facts, plan, knowledge()).ranks] == [2, 3]


def test_script_config_flag_is_read(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("use_vllm: true\nnum_generations: 4\n")
    plan = build_plan(launch=f"accelerate launch t.py --config {cfg} --num_generations 8", live=False)
    assert plan.config["use_vllm"] is True and plan.config["num_generations"] == 8
    assert plan.config_origin["num_generations"] == "command line"


def test_trl_015_auto_with_one_gpu_shares_it():
    lay = layout(
        "CUDA_VISIBLE_DEVICES=0 python t.py",
        config={"use_vllm": True, "vllm_device": "auto"},
        packages=LEGACY,
    )
    assert lay.vllm_device_resolved == "cuda:0" and lay.generation == [0] == lay.training
    lay14 = layout(
        "CUDA_VISIBLE_DEVICES=0 python t.py",
        config={"use_vllm": True, "vllm_device": "auto"},
        packages={**LEGACY, "trl": "0.14.0"},
    )
    assert lay14.vllm_device_resolved == "cuda:1" and lay14.generation == []


# --- wrappers, multi-node lines and bad counts ------------------------------------------------

DATA = Path(__file__).parent / "data"


def in_trl_checkout(tmp_path, monkeypatch) -> None:
    """A working folder with TRL's examples/accelerate_configs/deepspeed_zero3.yaml."""
    target = tmp_path / "examples" / "accelerate_configs"
    target.mkdir(parents=True)
    shutil.copy(DATA / "deepspeed_zero3.yaml", target)
    monkeypatch.chdir(tmp_path)


def test_trl_slurm_example_is_eight_processes_per_node_of_thirty_two(tmp_path, monkeypatch):
    from tests.plan.test_launch import TRL_SLURM

    in_trl_checkout(tmp_path, monkeypatch)
    lay = layout(TRL_SLURM, config={"use_vllm": True, "vllm_mode": "server"})
    assert (lay.num_processes, lay.num_machines, lay.world_size) == (8, 4, 32)
    assert lay.unresolved is None and lay.problems["distributed"]
    assert [r.gpu for r in lay.ranks] == list(range(8))
    # the server runs on the node srun picks (--nodelist): not on this node's training GPUs
    assert lay.server.source == "srun" and lay.generation == []


def test_unexpanded_counts_leave_the_layout_unresolved():
    lay = layout("accelerate launch --num_processes $((SLURM_NNODES * 8)) --num_machines $SLURM_NNODES t.py")
    assert lay.unresolved and "--num_machines $SLURM_NNODES" in lay.unresolved and not lay.ranks
    lay = layout(
        "export WORLD=16\naccelerate launch --num_processes $WORLD --num_machines 2 "
        "--machine_rank $SLURM_PROCID t.py"
    )
    assert lay.unresolved is None and (lay.num_processes, lay.world_size) == (8, 16)


def test_unknown_wrapper_is_not_guessed_as_one_python_process():
    lay = layout("sudo python t.py", n=8)
    assert lay.unresolved and "sudo" in lay.unresolved and lay.ranks == []


def test_torchrun_elastic_nnodes_plans_the_maximum():
    lay = layout("torchrun --nnodes 1:4 --nproc_per_node 8 t.py")
    assert lay.num_machines == 4 and lay.world_size == 32


def test_deepspeed_hostfile_nodes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lay = layout("deepspeed --hostfile hosts --num_gpus 8 t.py")
    assert lay.unresolved and "--num_nodes" in lay.unresolved
    (tmp_path / "hosts").write_text("# two nodes\nworker-1 slots=8\nworker-2 slots=8\n")
    lay = layout("deepspeed --hostfile hosts --num_gpus 8 t.py")
    assert lay.num_machines == 2 and lay.world_size == 16
    assert layout("deepspeed --hostfile hosts --num_nodes 1 t.py").world_size == 8


@pytest.mark.parametrize(
    "line, message",
    [
        ("torchrun --nnodes -5 t.py", "--nnodes -5: at least 1 node"),
        ("torchrun --nnodes 1:-4 t.py", "--nnodes 1:-4: at least 1 node"),
        ("torchrun --nnodes 4:2 t.py", "--nnodes 4:2: MIN is larger than MAX"),
        ("torchrun --nproc_per_node 2.9 t.py", "--nproc_per_node 2.9: expected a whole number"),
        ("torchrun --nproc_per_node two t.py", "--nproc_per_node two: expected a whole number"),
        ("torchrun --nproc_per_node 1e999 t.py", "--nproc_per_node 1e999: expected"),
        ("deepspeed --num_nodes -3 t.py", "--num_nodes -3: at least 1 node"),
        ("deepspeed --num_gpus 1.5 t.py", "--num_gpus 1.5: expected a whole number"),
        ("accelerate launch --num_processes 1e999 t.py", "--num_processes 1e999: expected"),
        ("accelerate launch --num_machines 0 t.py", "--num_machines 0: at least 1 machine"),
        ("accelerate launch --machine_rank -1 t.py", "--machine_rank -1: must be 0 or more"),
        (
            "trl vllm-serve --model m --data_parallel_size -1\ntorchrun t.py",
            "--data_parallel_size -1: at least 1",
        ),
        (
            "trl vllm-serve --model m --tensor-parallel-size 0.5\ntorchrun t.py",
            "--tensor_parallel_size 0.5: expected a whole number",
        ),
    ],
)
def test_impossible_counts_are_input_errors(line, message):
    with pytest.raises(InputError, match=re.escape(message)):
        layout(line, config={"use_vllm": True, "vllm_mode": "server"})


def test_count_keywords_and_specials_stay_valid():
    assert layout("torchrun --nproc_per_node gpu t.py", n=4).num_processes == 4
    assert layout("torchrun --nproc_per_node auto t.py", n=2).num_processes == 2
    assert "CPU core" in layout("torchrun --nproc_per_node cpu t.py").unresolved
    assert layout("deepspeed --num_gpus -1 --num_nodes -1 t.py", n=3).world_size == 3


def test_accelerate_config_counts_are_named_by_file():
    with pytest.raises(InputError, match="accelerate config.*num_processes: 2.5"):
        layout("accelerate launch t.py", accelerate={"num_processes": 2.5})


def test_open_r1_train_slurm_two_training_nodes(tmp_path, monkeypatch):
    """open-r1's slurm/train.slurm (huggingface/open-r1@1416fa0cf21595d2083b399a2a0bbddd7f6e9563)
    on 3 nodes with vLLM: 2 train (16 processes), the last serves; its zero3.yaml is TRL's."""
    (tmp_path / "recipes" / "accelerate_configs").mkdir(parents=True)
    shutil.copy(DATA / "deepspeed_zero3.yaml", tmp_path / "recipes" / "accelerate_configs" / "zero3.yaml")
    recipe = tmp_path / "recipes" / "Qwen2.5-1.5B-Instruct" / "grpo"
    recipe.mkdir(parents=True)
    (recipe / "config_demo.yaml").write_text(  # the recipe's batch keys; server mode spelled
        "use_vllm: true\ngradient_accumulation_steps: 4\nnum_generations: 16\n"  # out (TRL's
        "per_device_train_batch_size: 16\nvllm_mode: server\n"
    )  # default of its era)
    monkeypatch.chdir(tmp_path)
    launch = (
        "srun --nodes=1 --ntasks=1 --nodelist=ip-c trl vllm-serve --model Qwen/Qwen2.5-1.5B-Instruct"
        " --revision main --tensor_parallel_size 1 --data_parallel_size 1 &\n"
        "srun --wait=60 --kill-on-bad-exit=1 --nodes=2 --ntasks=2 --nodelist=ip-a,ip-b bash -c "
        "'ACCELERATE_LOG_LEVEL=info TRANSFORMERS_VERBOSITY=info accelerate launch --config_file "
        "recipes/accelerate_configs/zero3.yaml --gradient_accumulation_steps 4 --num_machines 2 "
        "--num_processes 16 --main_process_ip ip-a --main_process_port 6000 --machine_rank "
        "$SLURM_PROCID --rdzv_backend=c10d --max_restarts 1 --tee 3 src/open_r1/grpo.py --config "
        "recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml --vllm_server_host=ip-c'"
    )
    lay = layout(launch)
    assert (lay.num_processes, lay.num_machines, lay.world_size) == (8, 2, 16)
    assert lay.generation_mode == "server" and lay.server.source == "srun"
    assert lay.generation == [] and len(lay.training) == 8


@pytest.mark.parametrize(
    "launch",
    [
        "accelerate launch --num_processes <num_processes> t.py",  # the docs' placeholders
        "accelerate launch --num_processes <N-1> --multi_gpu t.py",
        "accelerate launch --num_processes {N} t.py",
        "accelerate launch --num_processes NUM_GPUS t.py",
        "torchrun --nproc_per_node=<N> t.py",
        "deepspeed --num_gpus <N> t.py",
        "CUDA_VISIBLE_DEVICES=$TRAIN_GPUS accelerate launch --num_processes 2 t.py",
        "CUDA_VISIBLE_DEVICES=<gpu_ids> accelerate launch --num_processes 2 t.py",
        "accelerate launch --gpu_ids ${GPUS} --num_processes 2 t.py",
    ],
)
def test_placeholders_are_unknown_never_guessed(launch):
    """A document's placeholder or an unset shell variable where a count or a GPU list belongs
    leaves the layout unresolved (said, its rules skipped): never bad input, never a GPU that
    'is not a GPU of this machine'."""
    lay = layout(launch)
    assert lay.unresolved and "envdoctor does not evaluate it" in lay.unresolved
    assert lay.ranks == [] and not lay.problems.get("visible")


def test_shell_variables_of_this_shell_are_expanded():
    lay = layout(
        "CUDA_VISIBLE_DEVICES=$TRAIN_GPUS accelerate launch --num_processes 2 t.py", env={"TRAIN_GPUS": "2,3"}
    )
    assert lay.unresolved is None and [r.gpu for r in lay.ranks] == [2, 3]


def test_a_server_on_placeholder_gpus_is_placed_nowhere_known():
    lay = layout(
        "CUDA_VISIBLE_DEVICES=$VLLM_GPUS trl vllm-serve --model m\n"
        "CUDA_VISIBLE_DEVICES=1,2 accelerate launch --num_processes 2 t.py",
        config={"use_vllm": True, "vllm_mode": "server"},
    )
    assert lay.unresolved is None and [r.gpu for r in lay.ranks] == [1, 2]
    assert "left to the shell" in lay.server.source and lay.server.gpus == []


@pytest.mark.parametrize(
    ("launch", "config", "processes"),
    [
        ("trl grpo --config c.yaml --accelerate_config zero2", {}, 8),  # TRL's docs (clis.md)
        ("trl grpo --accelerate_config zero3 --num_processes 4", {}, 4),
        ("trl grpo --config c.yaml", {"accelerate_config": "zero3", "num_processes": 2}, 2),
        (
            "trl grpo --config c.yaml --num_processes 6",
            {"accelerate_config": "multi_gpu", "num_processes": 2},
            6,
        ),
    ],
)
def test_trl_cli_accelerate_config_names_a_config_trl_ships(tmp_path, monkeypatch, launch, config, processes):
    """`--accelerate_config zero2` names trl/accelerate_configs/zero2.yaml (no file of that name
    here): it was "accelerate config zero2: cannot read" (exit 2) before; in the config file it
    and `num_processes` are what TRL's CLI hands accelerate, not GRPOConfig keys."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("".join(f"{k}: {v}\n" for k, v in {"use_vllm": True, **config}.items()))
    facts = from_dict(snapshot(8, packages=MODERN), "t")
    plan = build_plan(launch=launch, live=False)
    assert "accelerate_config" not in plan.config and "num_processes" not in plan.config
    assert plan.accelerate["num_processes"] == 8 and "TRL's trl/accelerate_configs/" in plan.accelerate_path
    lay = resolve_layout(facts, plan, knowledge())
    assert lay.unresolved is None and lay.num_processes == processes


def test_a_file_of_that_name_wins_over_trls_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "zero2").write_text("distributed_type: MULTI_GPU\nnum_processes: 3\n")
    plan = build_plan(launch="trl grpo --accelerate_config zero2", live=False)
    assert plan.accelerate == {"distributed_type": "MULTI_GPU", "num_processes": 3}
