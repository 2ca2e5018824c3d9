"""Launch lines as users type them."""

from __future__ import annotations

import pytest

from envdoctor.errors import InputError
from envdoctor.plan.launch import parse_launch, parse_launches, parse_script_args


def test_accelerate_with_prefix_and_script_args():
    (lx,) = parse_launches(
        "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 4 "
        "--gpu_ids 0,2,3,4,5 --config_file ds.yaml train_grpo.py "
        "--vllm_device auto --use_vllm"
    )
    assert lx.launcher == "accelerate" and lx.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert lx.options == {"num_processes": 4, "gpu_ids": "0,2,3,4,5", "config_file": "ds.yaml"}
    assert lx.script == "train_grpo.py"
    assert parse_script_args(lx.script_args) == {"vllm_device": "auto", "use_vllm": True}


def test_hyphenated_and_equals_flags_and_module():
    lx = parse_launch("torchrun --nproc-per-node=2 --nnodes 1 -m pkg.train --lr 1e-5")
    assert lx.launcher == "torchrun" and lx.options["nproc_per_node"] == 2
    assert lx.module == "pkg.train" and parse_script_args(lx.script_args) == {"lr": 1e-5}


def test_python_forms():
    assert parse_launch("python3 -u train.py --bf16").script == "train.py"
    lx = parse_launch("python -m torch.distributed.run --nproc_per_node 2 train.py")
    assert lx.launcher == "torchrun" and lx.options["nproc_per_node"] == 2
    assert parse_launch("./train.py --x 1").launcher == "python"


def test_multi_gpu_boolean_does_not_eat_the_script():
    lx = parse_launch("accelerate launch --multi_gpu --num_processes 2 train.py")
    assert lx.options["multi_gpu"] is True and lx.script == "train.py"


def test_trl_commands():
    srv = parse_launch(
        "CUDA_VISIBLE_DEVICES=6,7 trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 2 --port 8001"
    )
    assert srv.is_server and srv.options["tensor_parallel_size"] == 2
    grpo = parse_launch("trl grpo --config grpo.yaml --num_processes 6")
    assert grpo.launcher == "trl-grpo" and grpo.options["num_processes"] == 6


def test_several_lines_and_export():
    lines = parse_launches(
        "export CUDA_VISIBLE_DEVICES=0,1,2\ntrl vllm-serve --model m & accelerate launch train.py"
    )
    assert [lx.launcher for lx in lines] == ["trl-vllm-serve", "accelerate"]
    assert all(lx.env["CUDA_VISIBLE_DEVICES"] == "0,1,2" for lx in lines)


def test_unbalanced_quotes_are_input_errors():
    with pytest.raises(InputError, match="launch command"):
        parse_launches("accelerate launch 'train.py")


def test_script_args_types_and_lists():
    args = parse_script_args(["--no_bf16", "--reward_weights", "1.0", "2", "--x=none", "--name", "a-b"])
    assert args == {"bf16": False, "reward_weights": [1.0, 2], "x": None, "name": "a-b"}


# --- wrappers: what each node runs -------------------------------------------------------------

# TRL's multi-node GRPO example, docs/source/grpo_trainer.md ("GRPO at scale") at
# https://github.com/huggingface/trl/blob/f2cd57710ae345ea6428ae95363267fcf38a3dc8/docs/source/grpo_trainer.md
TRL_SLURM = """srun --nodes=4 --ntasks=4 --nodelist="${NODELIST[@]:0:4}" accelerate launch \\
     --config_file examples/accelerate_configs/deepspeed_zero3.yaml \\
     --num_processes 32 \\
     --num_machines 4 \\
     --main_process_ip ${NODELIST[0]} \\
     --machine_rank $SLURM_PROCID \\
     --rdzv_backend c10d \\
     train_grpo.py \\
     --server_ip $VLLM_NODE &

srun --nodes=1 --ntasks=1 --nodelist="${NODELIST[4]}" trl vllm-serve --model Qwen/Qwen2.5-72B --tensor_parallel_size 8 &

wait
"""  # noqa: E501


def test_trl_slurm_example_runs_accelerate_once_per_node():
    trainer, server = parse_launches(TRL_SLURM)
    assert trainer.launcher == "accelerate" and trainer.unresolved is None
    assert trainer.options["num_processes"] == 32 and trainer.options["num_machines"] == 4
    assert trainer.script == "train_grpo.py" and trainer.nodes == 4
    assert trainer.placed_by == "srun" and trainer.wrappers[0].startswith("srun --nodes=4")
    assert server.is_server and server.options["tensor_parallel_size"] == 8
    assert server.placed_by == "srun"


def test_open_r1_train_slurm_line_through_srun_and_bash_c():
    # open-r1 slurm/train.slurm (huggingface/open-r1@1416fa0cf21595d2083b399a2a0bbddd7f6e9563),
    # its variables expanded for 2 training nodes: `srun $SRUN_ARGS bash -c "$LAUNCHER $CMD"`
    line = (
        "srun --wait=60 --kill-on-bad-exit=1 --nodes=2 --ntasks=2 --nodelist=ip-a,ip-b "
        "bash -c 'ACCELERATE_LOG_LEVEL=info TRANSFORMERS_VERBOSITY=info accelerate launch "
        "--config_file recipes/accelerate_configs/zero3.yaml --gradient_accumulation_steps 4 "
        "--num_machines 2 --num_processes 16 --main_process_ip ip-a --main_process_port 6000 "
        "--machine_rank $SLURM_PROCID --rdzv_backend=c10d --max_restarts 1 --tee 3 "
        "src/open_r1/grpo.py --config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml "
        "--vllm_server_host=ip-c'"
    )
    (lx,) = parse_launches(line)
    assert lx.launcher == "accelerate" and lx.unresolved is None
    assert lx.options["num_processes"] == 16 and lx.options["num_machines"] == 2
    assert lx.script == "src/open_r1/grpo.py" and lx.env["ACCELERATE_LOG_LEVEL"] == "info"
    assert [w.split()[0] for w in lx.wrappers] == ["srun", "bash"]
    # the script as published, variables unexpanded: said, not guessed
    (raw,) = parse_launches('srun $SRUN_ARGS bash -c "$LAUNCHER $CMD"')
    assert raw.unresolved and "$SRUN_ARGS" in raw.unresolved


@pytest.mark.parametrize(
    "line, launcher, options",
    [
        ("nohup python -m torch.distributed.run --nproc_per_node 2 t.py", "torchrun", {"nproc_per_node": 2}),
        (
            "env -u WANDB_MODE NCCL_DEBUG=INFO python -m accelerate.commands.launch --num_processes 2 t.py",
            "accelerate",
            {"num_processes": 2},
        ),
        (
            "python -m accelerate.commands.accelerate_cli launch --num_processes 3 t.py",
            "accelerate",
            {"num_processes": 3},
        ),
        (
            "timeout 3600 uv run --with wandb accelerate launch --num_processes 2 t.py",
            "accelerate",
            {"num_processes": 2},
        ),
        (
            "conda run -n rl --no-capture-output torchrun --nproc_per_node 4 t.py",
            "torchrun",
            {"nproc_per_node": 4},
        ),
        (
            "mpirun -np 2 -N 1 -x NCCL_DEBUG=INFO --mca btl tcp torchrun --nproc_per_node 8 --nnodes 2 t.py",
            "torchrun",
            {"nproc_per_node": 8, "nnodes": 2},
        ),
        (
            "sh -c 'cd /work && exec deepspeed --hostfile hosts --num_gpus 8 t.py'",
            "deepspeed",
            {"hostfile": "hosts", "num_gpus": 8},
        ),
    ],
)
def test_wrappers_resolve_to_the_launcher(line, launcher, options):
    (lx,) = parse_launches(line)
    assert lx.launcher == launcher and lx.unresolved is None and lx.script == "t.py"
    assert {k: lx.options[k] for k in options} == options


def test_wrapper_environment_reaches_the_launch():
    (lx,) = parse_launches("mpirun -np 1 -x CUDA_VISIBLE_DEVICES=2,3 env A=1 torchrun t.py")
    assert lx.env == {"CUDA_VISIBLE_DEVICES": "2,3", "A": "1"}
    (lx,) = parse_launches("srun -n1 --export=ALL,CUDA_VISIBLE_DEVICES=1 python t.py")
    assert lx.env == {"CUDA_VISIBLE_DEVICES": "1"} and lx.unresolved is None


@pytest.mark.parametrize(
    "line, why",
    [
        ("sudo python t.py", "`sudo` is not a launcher"),
        ("bash train.sh", "shell script"),
        ("./run.sh --lr 1", "a shell script that is not here (run.sh)"),
        ("srun --ntasks-per-node 8 python t.py", "whether they form one torch.distributed job"),
        ("mpirun -np 16 python t.py", "16 copies"),
        ("srun --ntasks-per-node=2 torchrun --nproc_per_node 4 t.py", "2 copies of torchrun"),
        ("srun --ntasks=8 accelerate launch t.py", "depends on the allocation"),
        ("$LAUNCHER train.py", "shell variable"),
        ("python", "runs no script"),
    ],
)
def test_lines_that_cannot_be_resolved_say_why(line, why):
    (lx,) = parse_launches(line)
    assert lx.unresolved and why in lx.unresolved


def test_job_script_statements_are_not_launches():
    lines = parse_launches(
        "module load cuda/12.4\nsource .venv/bin/activate\n"
        "export CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node 2 t.py &\n"
        "sleep 5\nwait"
    )
    assert [lx.launcher for lx in lines] == ["torchrun"]
    assert lines[0].env == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_argv_is_not_split_again():
    (lx,) = parse_launches(None, ["python", "train.py", "--run_name", "a b;c", "--x", "$HOME"])
    assert lx.script_args == ["--run_name", "a b;c", "--x", "$HOME"]
    lines = parse_launches("export A=1", ["torchrun", "t.py", "&&", "python", "u.py"])
    assert [lx.launcher for lx in lines] == ["torchrun", "python"]
    assert all(lx.env == {"A": "1"} for lx in lines)


def test_numbers_that_overflow_stay_as_typed():
    lx = parse_launch("accelerate launch --num_processes 1e999 t.py")
    assert lx.options["num_processes"] == "1e999"


def test_redirections_are_not_commands_or_arguments():
    server, trainer, other, quoted = parse_launches(
        "nohup trl vllm-serve --model m >srv.log 2>&1 &\n"
        "CUDA_VISIBLE_DEVICES=0,1 nohup python t.py --x 1 > log.txt 2>&1 &\n"
        "python u.py &> all.log; python v.py --prompt 'a > b' 2>>err.log < in.txt"
    )
    assert server.is_server and server.options == {"model": "m"}
    assert trainer.script == "t.py" and trainer.script_args == ["--x", "1"]
    assert other.script == "u.py" and other.script_args == []
    assert quoted.script_args == ["--prompt", "a > b"]


def test_a_doc_placeholder_is_a_word_not_a_redirection():
    (trainer,) = parse_launches("accelerate launch --num_processes <num_processes> train.py <SCRIPT_ARGS>")
    assert trainer.options["num_processes"] == "<num_processes>"
    assert trainer.script == "train.py" and trainer.script_args == ["<SCRIPT_ARGS>"]


def test_a_literal_cd_before_the_launch_moves_the_files_it_names():
    # open-r1 forks run from scripts/: the configs are one folder up from there
    (trainer,) = parse_launches(
        "cd scripts && ACCELERATE_LOG_LEVEL=info accelerate launch --config_file ../configs/zero2.yaml "
        "--num_processes=7 ../src/grpo.py --config ../configs/grpo.yaml"
    )
    assert trainer.options["config_file"] == "configs/zero2.yaml"
    assert trainer.script == "src/grpo.py" and "configs/zero2.yaml" in trainer.program
    assert trainer.script_args[trainer.script_args.index("--config") + 1] == "configs/grpo.yaml"
    assert trainer.options["num_processes"] == 7


def test_a_cd_envdoctor_cannot_follow_leaves_the_paths_as_written():
    for cd in ("cd $WORK", "cd ~/run", "cd /abs/dir", "cd -"):
        (trainer,) = parse_launches(f"{cd} && accelerate launch --config_file c.yaml train.py")
        assert trainer.options["config_file"] == "c.yaml" and trainer.script == "train.py"
    (trainer,) = parse_launches("accelerate launch --config_file c.yaml train.py")
    assert trainer.options["config_file"] == "c.yaml"
