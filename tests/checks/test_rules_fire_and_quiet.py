"""Every rule: at least one scenario where it fires and one where it stays quiet.

Each scenario is a snapshot (facts) + a config + a launch line, checked exactly as
`envdoctor check --facts … --config … -- <launch>` would.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from envdoctor.checks.registry import all_rules
from tests.conftest import LEGACY, MODERN, RTX3090, V100, findings, snapshot

VLLM_SERVER = {"use_vllm": True, "vllm_mode": "server"}
LEG_CFG = {"use_vllm": True, "vllm_device": "auto", "num_generations": 4, "per_device_train_batch_size": 4}
BUSY = {3: [{"pid": 4321, "name": "python other_job.py", "used_mib": 23500}]}

# The data rules' scenarios: files written to a temporary folder ("files"); "{tmp}" names it
_Q = json.dumps({"prompt": "What is 2 + 2?", "solution": "4"})
_NOPROMPT = json.dumps({"question": "What is 2 + 2?", "solution": "4"})
_CHAT = json.dumps({"prompt": [{"role": "user", "content": "What is 2 + 2?"}], "solution": "4"})
_LONG = json.dumps({"prompt": "word " * 200, "solution": "4"})
_TRAIN = "from trl import GRPOTrainer\n{defs}\nGRPOTrainer(model='m', reward_funcs=[r])\n"
_UNSLOTH = (
    "from unsloth import FastLanguageModel\n"
    "m, t = FastLanguageModel.from_pretrained('m', fast_inference={fast})\n"
)
_DS = (
    '{{"bf16": {{"enabled": "auto"}}, "optimizer": {{"type": "AdamW"}}, '
    '"zero_optimization": {{"stage": {stage}}}}}'
)
_ACC_DS_FILE = (
    "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
    "  deepspeed_config_file: {tmp}/ds.json\nnum_processes: 2\n"
)
_SPLIT = "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m ; CUDA_VISIBLE_DEVICES=0 python {tmp}/train.py"
# an Azure ML command job that runs train.py (plan/launchers): LAY017 / LAY018
_AML_JOB = (
    "command: python train.py\nresources:\n  instance_count: 1\n"
    "distribution:\n  type: {kind}\n  process_count_per_instance: 2\n"
)
_COLO = {"use_vllm": True, "vllm_mode": "colocate", "dataset_name": "{tmp}/d.jsonl"}
# a script that builds vLLM's engine itself after moving a model to CUDA: LAY021
_ENGINE = "import torch\nfrom vllm import LLM\n{body}"
_ENGINE_BODY = "x = torch.zeros(1).cuda()\nllm = LLM(model='m')\n"
_EXTERNAL = "llm = LLM(model='m', seed=0, distributed_executor_backend='external_launcher')\n"
_ENGINE_GUARDED = (
    "def main():\n    x = torch.zeros(1).cuda()\n    llm = LLM(model='m')\n\n"
    "if __name__ == '__main__':\n    main()\n"
)

# rule id -> (fires, quiet): each a dict of snapshot kwargs ("snap"), config, launch
SCENARIOS: dict[str, tuple[dict, dict]] = {
    "PKG001": (
        {"snap": {"packages": {**MODERN, "vllm": None}}, "config": {"use_vllm": True}},
        {"config": {"use_vllm": True}},
    ),
    # a TrainingArguments feature whose package the snapshot says is not installed
    "PKG014": (
        {"snap": {"packages": MODERN, "absent": ["liger-kernel"]}, "config": {"use_liger_kernel": True}},
        {"snap": {"packages": {**MODERN, "liger-kernel": "0.6.1"}}, "config": {"use_liger_kernel": True}},
    ),
    "PKG002": (
        {
            "snap": {"packages": {**LEGACY, "vllm": "0.7.0"}},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 1 train.py",
        },
        {
            "snap": {"packages": LEGACY},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 1 train.py",
        },
    ),
    "PKG003": (
        {
            "snap": {"n_gpus": 4, "packages": {**LEGACY, "vllm": "0.7.2"}},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 3 train.py",
        },
        {
            "snap": {"n_gpus": 4, "packages": LEGACY},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 3 train.py",
        },
    ),
    "PKG004": (
        {
            "snap": {
                "packages": {
                    **MODERN,
                    "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0", "transformers>=4.51.1"]},
                    "torch": "2.7.0+cu126",
                }
            }
        },
        {
            "snap": {
                "packages": {
                    **MODERN,
                    "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0"]},
                    "torch": "2.6.0+cu124",
                }
            }
        },
    ),
    "PKG005": ({"snap": {"packages": {**MODERN, "torch": "2.6.0a0+gitabc_local build"}}}, {}),
    "PKG006": (
        {"snap": {"packages": {**MODERN, "trl": "0.24.0", "vllm": "0.11.0"}}, "config": {"use_vllm": True}},
        {"snap": {"packages": {**MODERN, "trl": "0.24.0", "vllm": "0.10.2"}}, "config": {"use_vllm": True}},
    ),
    "KNF001": (
        {"snap": {"packages": {**MODERN, "trl": "0.25.0", "vllm": "0.12.0"}}, "config": {"use_vllm": True}},
        {"snap": {"packages": {**MODERN, "trl": "0.27.2", "vllm": "0.12.0"}}, "config": {"use_vllm": True}},
    ),
    "PKG008": (
        {"snap": {"packages": {"torch": "2.9.0"}}, "config": {"num_generations": 4}},
        {"config": {"num_generations": 4}},
    ),
    "PKG009": (  # a release newer than rules/knowledge/horizon.yaml knows; the newest known is quiet
        {"snap": {"packages": {**MODERN, "trl": "1.17.0"}}},
        {"snap": {"packages": {**MODERN, "trl": "1.16.0", "torch": "2.15.0"}}},
    ),
    "ENV001": ({"snap": {"packages": {}}}, {"snap": {"packages": {"torch": "2.9.0"}}}),
    # another framework trains (verl's entry point): said once at info; TRL's own line: quiet
    "ENV002": (
        {"launch": "python3 -m verl.trainer.main_ppo data.max_prompt_length=1024"},
        {"launch": "accelerate launch --num_processes 1 train.py"},
    ),
    "CFG001": (
        {"config": {"vllm_device": "auto", "use_vllm": True}},
        {"snap": {"packages": LEGACY}, "config": {"vllm_device": "auto"}},
    ),
    "CFG002": (
        {
            "config": {"num_generations": 3, "per_device_train_batch_size": 4},
            "launch": "accelerate launch --num_processes 2 train.py",
        },
        {
            "config": {"num_generations": 4, "per_device_train_batch_size": 4},
            "launch": "accelerate launch --num_processes 2 train.py",
        },
    ),
    "CFG003": ({"config": {"num_generations": 1}}, {"config": {"num_generations": 2}}),
    "CFG010": ({"config": {"loss_type": "gspo"}}, {"config": {"loss_type": "grpo"}}),
    "CFG004": ({"config": {"num_generation": 4}}, {"config": {"num_generations": 4}}),
    "CFG005": (
        {"config": {"num_generations": "eight"}},
        {"config": {"num_generations": "8", "learning_rate": "1e-5", "use_vllm": "no"}},
    ),
    "GPU001": ({"snap": {"n_gpus": 0}}, {}),
    "GPU002": (
        {"snap": {"env": {"CUDA_VISIBLE_DEVICES": "0,5"}}},
        {"snap": {"env": {"CUDA_VISIBLE_DEVICES": "1,0"}}},
    ),
    "GPU003": ({"snap": {"driver_cuda": "11.8"}}, {"snap": {"driver_cuda": "12.8"}}),
    "GPU004": (
        {"snap": {"model": V100, "n_gpus": 1}, "config": {"bf16": True}, "launch": "python train.py"},
        {
            "snap": {"model": V100, "n_gpus": 1},
            "config": {"bf16": False, "fp16": True},
            "launch": "python train.py",
        },
    ),
    "GPU008": (
        {"snap": {"packages": {**MODERN, "torch": "2.13.0+cpu"}}},
        {"snap": {"packages": {**MODERN, "torch": "2.13.0"}}},
    ),
    "GPU005": (
        {
            "snap": {
                "gpus": [
                    {"index": 0, "name": "NVIDIA A100", "compute_capability": "8.0"},
                    {"index": 1, "name": "NVIDIA H100", "compute_capability": "9.0"},
                ]
            },
            "launch": "torchrun --nproc_per_node 2 train.py",
        },
        {"launch": "torchrun --nproc_per_node 2 train.py"},
    ),
    "GPU006": ({"snap": {"gpus": [{"index": 0, "name": "A100", "mig": True}]}}, {}),
    "GPU007": (
        {
            "snap": {
                "gpus": [
                    {"index": 0, "name": "T4", "compute_capability": "7.5"},
                    {"index": 1, "name": "A100", "compute_capability": "8.0"},
                ],
                "env": {"CUDA_VISIBLE_DEVICES": "0"},
            }
        },
        {
            "snap": {
                "gpus": [
                    {"index": 0, "name": "T4", "compute_capability": "7.5"},
                    {"index": 1, "name": "A100", "compute_capability": "8.0"},
                ],
                "env": {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            }
        },
    ),
    "LAY001": (
        {
            "snap": {"packages": LEGACY},
            "config": {**LEG_CFG, "vllm_device": "cuda:4"},
            "launch": "accelerate launch --num_processes 1 train.py",
        },
        {
            "snap": {"packages": LEGACY},
            "config": {**LEG_CFG, "vllm_device": "cuda:1"},
            "launch": "accelerate launch --num_processes 1 train.py",
        },
    ),
    "LAY002": (
        {
            "snap": {"n_gpus": 4, "packages": LEGACY},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 4 train.py",
        },
        {
            "snap": {"n_gpus": 4, "packages": LEGACY},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 3 train.py",
        },
    ),
    "LAY003": ({"launch": "python train.py"}, {"launch": "torchrun --nproc_per_node 1 train.py"}),
    "LAY004": (
        {"launch": "torchrun --nproc_per_node 4 train.py"},
        {"launch": "torchrun --nproc_per_node 2 train.py"},
    ),
    "LAY005": (
        {"launch": "accelerate launch --num_processes 2 --gpu_ids 0,0 train.py"},
        {"launch": "accelerate launch --num_processes 2 --gpu_ids 0,1 train.py"},
    ),
    "LAY006": (
        {
            "snap": {"packages": LEGACY},
            "config": {**LEG_CFG, "vllm_device": "cuda:0"},
            "launch": "accelerate launch --num_processes 1 --gpu_ids 0,1 train.py",
        },
        {"snap": {"packages": LEGACY}, "config": LEG_CFG, "launch": "torchrun --nproc_per_node 1 train.py"},
    ),
    "LAY007": (
        {
            "snap": {"n_gpus": 4},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"
            " ; CUDA_VISIBLE_DEVICES=2 trl vllm-serve --model m "
            "--tensor_parallel_size 2",
        },
        {
            "snap": {"n_gpus": 4},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"
            " ; CUDA_VISIBLE_DEVICES=2,3 trl vllm-serve --model m "
            "--tensor_parallel_size 2",
        },
    ),
    "LAY010": (
        {
            "snap": {"n_gpus": 4},
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_tensor_parallel_size": 3},
            "launch": "accelerate launch --num_processes 4 train.py",
        },
        {
            "snap": {"n_gpus": 4},
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_tensor_parallel_size": 2},
            "launch": "accelerate launch --num_processes 4 train.py",
        },
    ),
    "LAY011": (
        {"launch": "accelerate launch --multi_gpu --num_processes 1 train.py"},
        {"launch": "accelerate launch --multi_gpu --num_processes 2 train.py"},
    ),
    "LAY014": (
        {"config": VLLM_SERVER, "launch": "trl vllm-serve --model m --port 99999999 ; python t.py"},
        {"config": VLLM_SERVER, "launch": "trl vllm-serve --model m --port 8001 ; python t.py"},
    ),
    "LAY012": (
        {
            "snap": {"packages": {**MODERN, "trl": "1.9.0", "vllm": "0.11.0"}},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=1 vllm serve M ; CUDA_VISIBLE_DEVICES=0 python t.py",
        },
        {
            "snap": {"packages": {**MODERN, "trl": "1.9.0", "vllm": "0.11.0"}},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M ; CUDA_VISIBLE_DEVICES=0 python t.py",
        },
    ),
    "LAY015": (
        {
            "snap": {"n_gpus": 4},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=3 trl vllm-serve --model m ; "
            "CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node 1 train.py",
        },
        {
            "snap": {"n_gpus": 4},
            "config": VLLM_SERVER,
            "launch": "CUDA_VISIBLE_DEVICES=3 trl vllm-serve --model m ; "
            "CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node 3 train.py",
        },
    ),
    "LAY026": (  # a launch script holding a git merge conflict: bash stops at its first marker
        {
            "launch": "bash {tmp}/run.sh",
            "files": {
                "run.sh": "accelerate launch \\\n<<<<<<< HEAD\n  --num_processes 2 \\\n=======\n"
                "  --num_processes 1 \\\n>>>>>>> other\n  train.py\n",
                "train.py": "from trl import GRPOConfig, GRPOTrainer\n",
            },
        },
        {
            "launch": "bash {tmp}/run.sh",
            "files": {
                "run.sh": "# ======= train =======\naccelerate launch --num_processes 2 train.py\n",
                "train.py": "from trl import GRPOConfig, GRPOTrainer\n",
            },
        },
    ),
    "LAY024": (  # a launcher option with one dash: accelerate's argparse exits 2
        {"launch": "accelerate launch -num_processes=2 train.py"},
        {"launch": "accelerate launch --num_processes=2 train.py -lr 0.1"},
    ),
    "LAY016": (
        {
            "config": VLLM_SERVER,
            "launch": _SPLIT,
            "files": {"train.py": _UNSLOTH.format(fast="True")},
        },
        {
            "config": VLLM_SERVER,
            "launch": _SPLIT,
            "files": {"train.py": _UNSLOTH.format(fast="False")},
        },
    ),
    "LAY017": (
        {
            "launch": "python {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="r = len"), "job.yml": _AML_JOB.format(kind="mpi")},
        },
        {"launch": "python {tmp}/train.py", "files": {"train.py": _TRAIN.format(defs="r = len")}},
    ),
    "LAY018": (
        {
            "launch": "python {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="r = len"), "job.yml": _AML_JOB.format(kind="pytorch")},
        },
        {
            "launch": "python {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="r = len"), "job.yml": _AML_JOB.format(kind="mpi")},
        },
    ),
    "LAY020": (  # a launch through a shell script: its line read as the trainer's
        {
            "launch": "bash {tmp}/run.sh",
            "files": {"train.py": _TRAIN.format(defs="r = len"), "run.sh": "python {tmp}/train.py\n"},
        },
        {"launch": "python {tmp}/train.py", "files": {"train.py": _TRAIN.format(defs="r = len")}},
    ),
    "LAY021": (  # a script's own vLLM engine, spawned (CUDA initialised) from unguarded code
        {"launch": "python {tmp}/gen.py", "files": {"gen.py": _ENGINE.format(body=_ENGINE_BODY)}},
        {"launch": "python {tmp}/gen.py", "files": {"gen.py": _ENGINE.format(body=_ENGINE_GUARDED)}},
    ),
    "LAY022": (  # external_launcher's engine in a plain python process: no RANK
        {"launch": "python {tmp}/gen.py", "files": {"gen.py": _ENGINE.format(body=_EXTERNAL)}},
        {
            "launch": "torchrun --nproc_per_node 1 {tmp}/gen.py",
            "files": {"gen.py": _ENGINE.format(body=_EXTERNAL)},
        },
    ),
    "LAY023": (  # TRL 0.25's default server mode, and no launch line starts the server
        {
            "snap": {"n_gpus": 2, "packages": {**MODERN, "trl": "0.25.1", "vllm": "0.11.2"}},
            "config": {"use_vllm": True},
            "launch": "accelerate launch --num_processes 2 train.py",
        },
        {
            "snap": {"n_gpus": 2, "packages": {**MODERN, "trl": "0.25.1", "vllm": "0.11.2"}},
            "config": {"use_vllm": True},
            "launch": "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m\n"
            "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 train.py",
        },
    ),
    "CFG012": (  # TRL 0.15's GRPOTrainer, use_peft, reentrant checkpointing (transformers' default)
        {"snap": {"packages": LEGACY}, "config": {"use_peft": True, "gradient_checkpointing": True}},
        {
            "snap": {"packages": LEGACY},
            "config": {
                "use_peft": True,
                "gradient_checkpointing": True,
                "gradient_checkpointing_kwargs": {"use_reentrant": False},
            },
        },
    ),
    "PKG015": (  # a resume the script makes on transformers 4.57 with torch 2.5
        {
            "snap": {"packages": {**LEGACY, "trl": "0.25.1", "transformers": "4.57.3", "vllm": None}},
            "launch": "python {tmp}/train.py",
            "files": {
                "train.py": _TRAIN.format(defs="r = len")
                + "t = GRPOTrainer()\nt.train(resume_from_checkpoint=True)\n"
            },
        },
        {
            "snap": {
                "packages": {
                    **LEGACY,
                    "trl": "0.25.1",
                    "transformers": "4.57.3",
                    "vllm": None,
                    "torch": "2.6.0",
                }
            },
            "launch": "python {tmp}/train.py",
            "files": {
                "train.py": _TRAIN.format(defs="r = len")
                + "t = GRPOTrainer()\nt.train(resume_from_checkpoint=True)\n"
            },
        },
    ),
    "LAY019": (
        {
            "launch": "accelerate launch --num_processes 1 --config_file {tmp}/gone.yaml {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="r = len")},
        },
        {
            "launch": "accelerate launch --num_processes 1 --config_file {tmp}/acc.yaml {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="r = len"), "acc.yaml": "distributed_type: MULTI_GPU\n"},
        },
    ),
    "LAY025": (  # accelerate's DeepSpeedPlugin refuses the config's mixed_precision beside a JSON
        {
            "launch": "accelerate launch --config_file {tmp}/acc.yaml {tmp}/train.py",
            "files": {
                "train.py": _TRAIN.format(defs="r = len"),
                "ds.json": _DS.format(stage=2),
                "acc.yaml": _ACC_DS_FILE + "mixed_precision: bf16\n",
            },
        },
        {
            "launch": "accelerate launch --config_file {tmp}/acc.yaml {tmp}/train.py",
            "files": {
                "train.py": _TRAIN.format(defs="r = len"),
                "ds.json": _DS.format(stage=2),
                "acc.yaml": _ACC_DS_FILE,
            },
        },
    ),
    "CFG009": (
        {
            "snap": {"packages": {**MODERN, "trl": "0.16.0"}},
            "config": {"deepspeed": "{tmp}/ds.json", "beta": 0.04, "bf16": True},
            "launch": "torchrun --nproc_per_node 2 {tmp}/train.py",
            "files": {"ds.json": _DS.format(stage=2), "train.py": _TRAIN.format(defs="r = len")},
        },
        {
            "snap": {"packages": {**MODERN, "trl": "0.16.0"}},
            "config": {"deepspeed": "{tmp}/ds.json", "beta": 0.04, "bf16": True},
            "launch": "torchrun --nproc_per_node 2 {tmp}/train.py",
            "files": {"ds.json": _DS.format(stage=3), "train.py": _TRAIN.format(defs="r = len")},
        },
    ),
    "MEM001": (
        {
            "snap": {
                "n_gpus": 4,
                "model": RTX3090,
                "packages": LEGACY,
                "used": {3: 23500},
                "processes": BUSY,
            },
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 3 train.py",
        },
        {
            "snap": {"n_gpus": 4, "model": RTX3090, "packages": LEGACY},
            "config": LEG_CFG,
            "launch": "accelerate launch --num_processes 3 train.py",
        },
    ),
    "MEM002": (
        {
            "snap": {
                "used": {0: 20000},
                "processes": {0: [{"pid": 7, "name": "python x", "used_mib": 20000}]},
            },
            "launch": "torchrun --nproc_per_node 1 train.py",
        },
        {"launch": "torchrun --nproc_per_node 1 train.py"},
    ),
    "MEM003": (
        {
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.9},
            "launch": "torchrun --nproc_per_node 2 train.py",
        },
        {
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3},
            "launch": "torchrun --nproc_per_node 2 train.py",
        },
    ),
    "ALC001": (
        {"snap": {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}}},
        {"snap": {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}},
    ),
    "ALC002": (
        {
            "snap": {
                "env": {
                    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                    "PYTORCH_ALLOC_CONF": "max_split_size_mb:128",
                }
            }
        },
        {
            "snap": {
                "env": {
                    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                    "PYTORCH_ALLOC_CONF": "expandable_segments:True",
                }
            }
        },
    ),
    "ALC003": (
        {"launch": "torchrun --nproc_per_node 1 train.py"},
        {"launch": "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc_per_node 1 train.py"},
    ),
    "ALC004": (
        {
            "snap": {"packages": {**MODERN, "vllm": "0.10.2"}},
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": True},
            "launch": "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc_per_node 2 train.py",
        },
        {
            "config": {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": True},
            "launch": "torchrun --nproc_per_node 2 train.py",
        },
    ),
    "DAT001": (
        {"config": {"dataset_name": "some-org/not-cached-here"}, "files": {}},
        {"config": {"dataset_name": "{tmp}/d.jsonl"}, "files": {"d.jsonl": _Q}},
    ),
    "DAT002": (
        {"launch": "trl grpo --dataset_name {tmp}/d.jsonl", "files": {"d.jsonl": _NOPROMPT}},
        {"launch": "trl grpo --dataset_name {tmp}/d.jsonl", "files": {"d.jsonl": _Q}},
    ),
    "DAT003": (
        {
            "launch": "trl grpo --dataset_name {tmp}/d.jsonl --model_name_or_path {tmp}/model",
            "files": {"d.jsonl": _CHAT, "model/tokenizer_config.json": "{}"},
        },
        {
            "launch": "trl grpo --dataset_name {tmp}/d.jsonl --model_name_or_path {tmp}/model",
            "files": {
                "d.jsonl": _CHAT,
                "model/tokenizer_config.json": json.dumps({"chat_template": "{{ x }}"}),
            },
        },
    ),
    "DAT004": (
        {"config": {**_COLO, "vllm_max_model_length": 64}, "files": {"d.jsonl": _LONG}},
        {"config": {**_COLO, "vllm_max_model_length": 4096}, "files": {"d.jsonl": _LONG}},
    ),
    "DAT005": (
        {"config": {"dataset_name": "{tmp}/d.jsonl", "max_prompt_length": 64}, "files": {"d.jsonl": _LONG}},
        {"config": {"dataset_name": "{tmp}/d.jsonl", "max_prompt_length": 4096}, "files": {"d.jsonl": _LONG}},
    ),
    "DAT006": (
        {
            "launch": "trl grpo --dataset_name {tmp}/d.jsonl --remove_unused_columns true",
            "files": {"d.jsonl": _Q},
        },
        {
            "launch": "trl grpo --dataset_name {tmp}/d.jsonl --remove_unused_columns false",
            "files": {"d.jsonl": _Q},
        },
    ),
    "DAT007": (
        {
            "launch": "python {tmp}/train.py --dataset_name {tmp}/d.jsonl",
            "files": {"d.jsonl": _Q, "train.py": _TRAIN.format(defs="def r(completions, answer, **kw): ...")},
        },
        {
            "launch": "python {tmp}/train.py --dataset_name {tmp}/d.jsonl",
            "files": {
                "d.jsonl": _Q,
                "train.py": _TRAIN.format(defs="def r(completions, solution, **kw): ..."),
            },
        },
    ),
    "DAT008": (
        {
            "launch": "python {tmp}/train.py --dataset_name {tmp}/d.jsonl",
            "files": {"d.jsonl": _Q, "train.py": _TRAIN.format(defs="def r(completions, solution): ...")},
        },
        {
            "launch": "python {tmp}/train.py --dataset_name {tmp}/d.jsonl",
            "files": {
                "d.jsonl": _Q,
                "train.py": _TRAIN.format(defs="def r(completions, solution, **kw): ..."),
            },
        },
    ),
    "DAT009": (
        {
            "launch": "trl grpo --reward_funcs no_such_reward --dataset_name {tmp}/d.jsonl",
            "files": {"d.jsonl": _Q},
        },
        {
            "launch": "trl grpo --reward_funcs think_format_reward --dataset_name {tmp}/d.jsonl",
            "files": {"d.jsonl": _Q},
        },
    ),
    "DAT010": (
        {
            "launch": "python {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="def r(completions, **kw):\n    out = [1.0]")},
        },
        {
            "launch": "python {tmp}/train.py",
            "files": {"train.py": _TRAIN.format(defs="def r(completions, **kw):\n    return [1.0]")},
        },
    ),
}
# Rules whose scenarios need the network or a live machine are tested in test_live_rules.py;
# the declared-stack rules (DCL, facts from a repository's files) in tests/declared/.
ELSEWHERE = {
    "LAY008",
    "LAY009",
    "LAY013",
    "PKG007",
    "DCL001",
    "DCL002",
    "DCL003",
    "DCL004",
    "DCL005",
    "DCL006",
    "DCL007",  # tests/declared/test_declared_moving_branch.py
    "DCL008",  # tests/declared/test_declared_local_version.py
}
# Credentials committed in a repository's files (the hook reads them): tests/gate/test_gate_secrets.py.
ELSEWHERE |= {"SEC001"}
# Launch paths, DeepSpeed configs and GPU restrictions of a repository's scripts and configs (the
# hook reads them): tests/gate/test_gate_repo_paths.py.
ELSEWHERE |= {"REP001", "REP002", "REP003"}
# A repository's config that is not valid YAML (the hook reads it): tests/gate/test_gate_unreadable.py.
ELSEWHERE |= {"CFG006"}
# A word of the config file's own YAML text (an unquoted `no`): tests/checks/test_config_words.py.
ELSEWHERE |= {"CFG013"}
# Keywords a training script passes TRL's trainer (the script is read from disk):
# tests/checks/test_trl_call_keywords.py.
ELSEWHERE |= {"CFG008"}
# Overrides of the methods TRL's trainer calls on itself: tests/checks/test_trl_overrides.py.
ELSEWHERE |= {"CFG011"}
# A key set twice in one config mapping: tests/gate/test_gate_duplicate_keys.py.
ELSEWHERE |= {"CFG007"}
# What the repository's shell scripts do as bash runs them, paths of the author's machine, GPUs two
# launches of one run share: tests/gate/test_gate_repo_shell.py.
ELSEWHERE |= {f"REP{n:03d}" for n in range(4, 13)}
# TRL declared with no upper bound (the hook's declared stack): tests/declared/test_declared_newest.py.
ELSEWHERE |= {"DCL009"}
# A declared vLLM range past the pinned TRL's band (the hook's declared stack):
# tests/declared/test_declared_vllm_past_trl.py.
ELSEWHERE |= {"DCL010"}
# A model loaded from a repository path only the author's machine has: tests/gate/test_gate_repo_models.py.
ELSEWHERE |= {"REP013"}
# The memory plan's rules need a model's config.json on disk: tests/memory/test_memory_rules.py.
ELSEWHERE |= {"MEM101", "MEM102", "MEM103", "MEM104", "MEM105", "MEM106"}
# A model newer than the installed transformers / vLLM (config.json on disk):
# tests/memory/test_model_support_check.py.
ELSEWHERE |= {"PKG010"}
# A folder or module of the repository on the run's import path named like a stack package (read
# from disk where check runs): tests/checks/test_import_shadow.py.
ELSEWHERE |= {"PKG011", "PKG012"}
# A package installed twice (the user site's copy first): tests/checks/test_package_installed_twice.py
# and tests/facts/test_package_copies.py (site folders built in a temporary folder).
ELSEWHERE |= {"PKG013"}


def _run(scenario: dict) -> set[str]:
    if "files" in scenario:  # written to a folder of its own; the HF caches point into it
        with tempfile.TemporaryDirectory() as tmp:
            scenario = json.loads(json.dumps(scenario).replace("{tmp}", tmp))
            for name, text in scenario.pop("files").items():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / name).write_text(text)
            snap = scenario.setdefault("snap", {})
            snap["env"] = {"HF_HOME": f"{tmp}/hf", **snap.get("env", {})}
            return _run(scenario)
    snap_kw = dict(scenario.get("snap", {}))
    if "packages" in snap_kw:
        snap_kw["packages"] = {k: v for k, v in snap_kw["packages"].items() if v is not None}
    return {
        f.rule
        for f in findings(snapshot(**snap_kw), config=scenario.get("config"), launch=scenario.get("launch"))
    }


def test_every_rule_has_scenarios():
    assert set(all_rules()) - ELSEWHERE == set(SCENARIOS)


@pytest.mark.parametrize("rule_id", sorted(SCENARIOS))
def test_fires(rule_id):
    assert rule_id in _run(SCENARIOS[rule_id][0])


@pytest.mark.parametrize("rule_id", sorted(SCENARIOS))
def test_quiet(rule_id):
    assert rule_id not in _run(SCENARIOS[rule_id][1])


def test_alc004_quiet_on_vllm_that_handles_expandable_segments():
    fires = dict(SCENARIOS["ALC004"][0])
    fires["snap"] = {"packages": {**MODERN, "vllm": "0.20.1"}}
    assert "ALC004" not in _run(fires)


def test_alc001_uses_the_installed_torch_release_messages():
    snap = {
        "packages": {**MODERN, "torch": "2.13.0"},
        "env": {"PYTORCH_CUDA_ALLOC_CONF": "bogus:1,expandable_segments:true"},
    }
    found = [f for f in findings(snapshot(**snap)) if f.rule == "ALC001"]
    text = " ".join(f.message for f in found)
    assert "Unrecognized key 'bogus' in CUDA allocator config." in text
    assert "exactly so capitalised" in text
    old = [
        f
        for f in findings(
            snapshot(packages={**MODERN, "torch": "2.5.1"}, env={"PYTORCH_CUDA_ALLOC_CONF": "bogus:1"})
        )
        if f.rule == "ALC001"
    ]
    assert "Unrecognized CachingAllocator option: bogus" in old[0].message


def test_alc002_alloc_conf_ignored_by_old_torch():
    snap = {
        "packages": {**MODERN, "torch": "2.5.1"},
        "env": {"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
    }
    found = [f for f in findings(snapshot(**snap)) if f.rule == "ALC002"]
    assert found and "no effect" in found[0].message


def test_cfg002_follows_each_trl_release_rule():
    cfg = {"num_generations": 3, "per_device_train_batch_size": 3, "gradient_accumulation_steps": 2}
    launch = "accelerate launch --num_processes 2 t.py"

    def fired(trl):
        return [
            f
            for f in findings(snapshot(2, packages={**MODERN, "trl": trl}), config=cfg, launch=launch)
            if f.rule == "CFG002"
        ]

    assert fired("0.14.0") == []  # no check in 0.14
    assert fired("0.15.2") == []  # 3 x 2 = 6 is divisible by 3
    cfg["per_device_train_batch_size"] = 4
    assert "processes (2)" in fired("0.16.0")[0].message  # 4 x 2 = 8
    assert "gradient_accumulation_steps (2)" in fired("0.17.0")[0].message
    assert "steps_per_generation (2)" in fired("1.16.0")[0].message


def test_pkg004_checks_the_extras_the_plan_uses():
    trl = {
        "version": "1.16.0",
        "requires": ["transformers>=4.56.2", "vllm<=0.31.0,>=0.22.0; extra == 'vllm'"],
    }
    snap = snapshot(2, packages={**MODERN, "trl": trl, "vllm": "0.12.0"})
    on = [
        f
        for f in findings(snap, config={"use_vllm": True})
        if f.rule == "PKG004" and f.message.startswith("trl")
    ]
    off = [
        f
        for f in findings(snap, config={"use_vllm": False})
        if f.rule == "PKG004" and f.message.startswith("trl")
    ]
    assert on and "vllm<=0.31.0,>=0.22.0" in on[0].message and not off


def test_pkg004_leaves_a_missing_vllm_to_pkg001():
    trl = {
        "version": "1.16.0",
        "requires": ["vllm<=0.31.0,>=0.22.0; extra == 'vllm'", "requests; extra == 'vllm'"],
    }
    snap = snapshot(2, packages={**{k: v for k, v in MODERN.items() if k != "vllm"}, "trl": trl})
    fired = [f.rule for f in findings(snap, config={"use_vllm": True})]
    assert "PKG001" in fired and "PKG004" not in fired


def test_pkg004_local_labels_and_prereleases():
    vllm = {"version": "0.8.5.post1", "requires": ["torch==2.6.0"]}
    assert "PKG004" not in {
        f.rule for f in findings(snapshot(1, packages={**MODERN, "vllm": vllm, "torch": "2.6.0+cu124"}))
    }
    assert "PKG004" in {
        f.rule for f in findings(snapshot(1, packages={**MODERN, "vllm": vllm, "torch": "2.7.0rc1"}))
    }
