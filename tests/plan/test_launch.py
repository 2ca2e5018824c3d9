"""Launch lines as users type them."""

from __future__ import annotations

import pytest

from envdoctor.errors import InputError
from envdoctor.plan.launch import parse_launch, parse_launches, parse_script_args


def test_accelerate_with_prefix_and_script_args():
    (lx,) = parse_launches("CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 4 "
                           "--gpu_ids 0,2,3,4,5 --config_file ds.yaml train_grpo.py "
                           "--vllm_device auto --use_vllm")
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
    srv = parse_launch("CUDA_VISIBLE_DEVICES=6,7 trl vllm-serve --model Qwen/Qwen2.5-7B "
                       "--tensor_parallel_size 2 --port 8001")
    assert srv.is_server and srv.options["tensor_parallel_size"] == 2
    grpo = parse_launch("trl grpo --config grpo.yaml --num_processes 6")
    assert grpo.launcher == "trl-grpo" and grpo.options["num_processes"] == 6


def test_several_lines_and_export():
    lines = parse_launches("export CUDA_VISIBLE_DEVICES=0,1,2\n"
                           "trl vllm-serve --model m & accelerate launch train.py")
    assert [lx.launcher for lx in lines] == ["trl-vllm-serve", "accelerate"]
    assert all(lx.env["CUDA_VISIBLE_DEVICES"] == "0,1,2" for lx in lines)


def test_unbalanced_quotes_are_input_errors():
    with pytest.raises(InputError, match="launch command"):
        parse_launches("accelerate launch 'train.py")


def test_script_args_types_and_lists():
    args = parse_script_args(["--no_bf16", "--reward_weights", "1.0", "2", "--x=none",
                              "--name", "a-b"])
    assert args == {"bf16": False, "reward_weights": [1.0, 2], "x": None, "name": "a-b"}
