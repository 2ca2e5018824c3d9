"""Job launchers a repository declares around a bare ``python train.py`` line
(envdoctor.plan.launchers): each kind changes the layout where its count is known, leaves it
unresolved (LAY017, info) where it is not, and stays out of the way where it runs another script
or no job is declared. Each case is a repository laid out in a temporary folder, checked from its
root as a pre-commit hook or a CI step would."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.plan.launch import parse_launches
from envdoctor.plan.launchers import _jobs_for
from tests.conftest import run_cli, snapshot

TRAIN = (
    "from trl import GRPOConfig, GRPOTrainer\n"
    "GRPOTrainer(model='m', reward_funcs=[len], args=GRPOConfig('o'))\n"
)


def _repo(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _check(root: Path, monkeypatch, line: str, gpus: int = 8):
    monkeypatch.chdir(root)
    plan = build_plan(launch=line, live=False)
    ctx = Context(facts=from_dict(snapshot(gpus, env={"HF_HOME": str(root / ".hf")}), "t"), plan=plan)
    out = run_rules(ctx)
    return plan, ctx.resolved, {f.rule: f for f in out.findings}


# --- Azure ML ----------------------------------------------------------------------------------

AML_YAML = """\
    $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
    code: src
    command: python train.py --output_dir ${{outputs.out}}
    environment: azureml:acpt-pytorch@latest
    compute: azureml:h100-cluster
    resources:
      instance_count: 2
    distribution:
      type: pytorch
      process_count_per_instance: 8
"""


def test_azureml_yaml_pytorch_distribution_is_one_process_per_gpu(tmp_path, monkeypatch):
    _repo(tmp_path, {"job.yml": AML_YAML, "src/train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert (lay.num_processes, lay.num_machines, lay.world_size) == (8, 2, 16)
    assert len(lay.ranks) == 8 and lay.process_gpus == 1
    assert "LAY003" not in found  # the DataParallel trap is not this run's
    assert found["LAY018"].severity.value == "info" and "job.yml" in found["LAY018"].message


def test_without_the_job_the_bare_line_is_still_the_dataparallel_trap(tmp_path, monkeypatch):
    _repo(tmp_path, {"src/train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job is None
    assert found["LAY003"].severity.value in ("error", "warning")  # by TRL's era (LAY003's why)


def test_a_line_with_azureml_bindings_is_an_azureml_jobs_command(tmp_path, monkeypatch):
    """Azure/azureml-examples' GRPO sample (held-out set 7): its job is declared in a notebook's
    cell, and the trainer line passes ``${{inputs.model_dir}}``: an Azure ML job's command, whose
    distribution starts the processes; how many is not known, so no DataParallel trap is said."""
    _repo(tmp_path, {"src/train.py": TRAIN})
    line = "python src/train.py --model_name_or_path ${{inputs.model_dir}} --output_dir ${{outputs.ckpt}}"
    plan, lay, found = _check(tmp_path, monkeypatch, line)
    assert plan.job is not None and plan.job.unknown and "Azure ML" in plan.job.kind
    assert "LAY003" not in found
    assert found["LAY017"].severity.value == "info" and "${{inputs.model_dir}}" in found["LAY017"].message
    # a job file that declares it still decides
    other = _repo(tmp_path / "declared", {"job.yml": AML_YAML, "src/train.py": TRAIN})
    plan, lay, found = _check(other, monkeypatch, "python src/train.py --output_dir ${{outputs.out}}")
    assert plan.job is not None and plan.job.per_node == 8 and not plan.job.unknown


def test_azureml_job_without_distribution_changes_nothing(tmp_path, monkeypatch):
    text = AML_YAML.replace(
        "    distribution:\n      type: pytorch\n      process_count_per_instance: 8\n", ""
    )
    text = text.replace("instance_count: 2", "instance_count: 1")
    _repo(tmp_path, {"job.yml": text, "src/train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job is not None and plan.job.per_node == 1 and not plan.job.distributed
    assert lay.num_processes == 1 and lay.process_gpus == 8
    assert "LAY003" in found  # one process over 8 GPUs: the trap is real


def test_azureml_mpi_distribution_leaves_the_count_to_the_script(tmp_path, monkeypatch):
    _repo(tmp_path, {"job.yml": AML_YAML.replace("type: pytorch", "type: mpi"), "src/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert lay.unresolved and "mpi" in lay.unresolved
    assert "LAY003" not in found and found["LAY017"].severity.value == "info"


# The shape of Azure/azureml-examples sdk/python/jobs/grpo (the sixth held-out set's Azure ML
# setup): the command job is built in a notebook next to the code folder, its command string
# extended with an f-string, the distribution a dict; written here, not copied
AML_NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "source": ["%%capture\n", "! pip install azure-ai-ml\n"]},
        {
            "cell_type": "code",
            "source": [
                "from azure.ai.ml import command, Input, Output\n",
                'command_str = """python BldDemo_Reasoning_Train.py \\\\\n',
                "    --config grpo_trainer_config.yaml \\\\\n",
                '    --output_dir ${{outputs.checkpoint_folder}} """\n',
                "command_str += f'--base_model_name \"{model.name}\"'\n",
                "job = command(\n",
                '    code="./src",\n',
                "    command=command_str,\n",
                "    environment=environment,\n",
                "    instance_count=2,\n",
                '    distribution={"type": "PyTorch", "process_count_per_instance": 8},\n',
                ")\n",
            ],
        },
    ]
}


def test_azureml_sdk_notebook_read_by_syntax_tree(tmp_path, monkeypatch):
    _repo(
        tmp_path,
        {
            "launch_job.ipynb": json.dumps(AML_NOTEBOOK),
            "src/BldDemo_Reasoning_Train.py": TRAIN,
            "src/grpo_trainer_config.yaml": "use_vllm: false\n",
        },
    )
    plan, lay, found = _check(tmp_path / "src", monkeypatch, "python BldDemo_Reasoning_Train.py")
    # from src/ (the job's code folder) without a git root the notebook above is not read
    assert plan.job is None
    (tmp_path / ".git").mkdir()
    _jobs_for.cache_clear()  # the declarations are read once per process
    plan, lay, found = _check(tmp_path / "src", monkeypatch, "python BldDemo_Reasoning_Train.py")
    assert plan.job is not None and plan.job.source.startswith("launch_job.ipynb:")
    assert (lay.num_processes, lay.num_machines) == (8, 2)
    assert "LAY003" not in found


def test_azureml_sdk_with_variable_counts_says_so_and_fires_no_layout_error(tmp_path, monkeypatch):
    code = (
        "import argparse\nfrom azure.ai.ml import command, PyTorchDistribution\n"
        "args = argparse.ArgumentParser().parse_args()\n"
        "job = command(command='python train.py', instance_count=args.nodes,\n"
        "              distribution=PyTorchDistribution(process_count_per_instance=args.gpus))\n"
    )
    _repo(tmp_path, {"submit.py": code, "train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert plan.job.unknown and "instance_count" in plan.job.unknown
    assert "LAY003" not in found and "LAY018" not in found
    assert found["LAY017"].severity.value == "info" and "submit.py:4" in found["LAY017"].message


def test_azureml_sdk_distribution_class_with_literal(tmp_path, monkeypatch):
    code = (
        "from azure.ai.ml import command, PyTorchDistribution\n"
        "job = command(command='python train.py', instance_count=1,\n"
        "              distribution=PyTorchDistribution(process_count_per_instance=4))\n"
    )
    _repo(tmp_path, {"submit.py": code, "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py", gpus=4)
    assert (lay.num_processes, lay.world_size) == (4, 4) and "LAY003" not in found


# --- SageMaker ---------------------------------------------------------------------------------

SM = """\
from sagemaker.huggingface import HuggingFace
INSTANCE = "ml.p4d.24xlarge"
est = HuggingFace(entry_point="train.py", source_dir="scripts", instance_type=INSTANCE,
                  instance_count=1, role=role, {dist})
est.fit()
"""


def test_sagemaker_torch_distributed_is_one_process_per_gpu_of_the_instance(tmp_path, monkeypatch):
    dist = 'distribution={"torch_distributed": {"enabled": True}}'
    _repo(tmp_path, {"launch.py": SM.format(dist=dist), "scripts/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python scripts/train.py")
    assert (lay.num_processes, lay.num_machines) == (8, 1) and "LAY003" not in found


def test_sagemaker_without_distribution_runs_one_process(tmp_path, monkeypatch):
    _repo(tmp_path, {"launch.py": SM.format(dist="volume_size=200"), "scripts/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python scripts/train.py")
    assert lay.num_processes == 1 and "LAY003" in found


def test_sagemaker_unknown_instance_type_is_said(tmp_path, monkeypatch):
    dist = 'distribution={"pytorchddp": {"enabled": True}}'
    text = SM.format(dist=dist).replace('"ml.p4d.24xlarge"', "os.environ['TYPE']")
    _repo(tmp_path, {"launch.py": text, "scripts/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python scripts/train.py")
    assert lay.unresolved and "LAY017" in found and "LAY003" not in found


def test_sagemaker_instance_gpus():
    from envdoctor.plan.launchers.sagemaker import instance_gpus

    assert instance_gpus("ml.p5.48xlarge") == 8
    assert instance_gpus("ml.g5.12xlarge") == 4
    assert instance_gpus("ml.g5.2xlarge") == 1
    assert instance_gpus("ml.p3.8xlarge") == 4
    assert instance_gpus("ml.c5.xlarge") is None


# --- SkyPilot ----------------------------------------------------------------------------------

SKY = """\
resources:
  accelerators: H100:8
num_nodes: 2
envs:
  CONFIG: recipes/grpo.yaml
setup: |
  pip install -r requirements.txt
run: |
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  python prepare.py
  {run}
"""


def test_skypilot_run_block_with_its_variables(tmp_path, monkeypatch):
    run = (
        "torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE "
        "--node_rank=$SKYPILOT_NODE_RANK --master_addr=$MASTER_ADDR train.py --config $CONFIG"
    )
    _repo(tmp_path, {"sky.yaml": SKY.format(run=run), "train.py": TRAIN, "prepare.py": "print(1)\n"})
    plan, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert plan.job.gpus_per_node == 8
    assert (lay.num_processes, lay.num_machines, lay.world_size) == (8, 2, 16)
    assert "LAY003" not in found


def test_skypilot_bare_python_on_two_nodes_is_not_one_job(tmp_path, monkeypatch):
    _repo(tmp_path, {"sky.yaml": SKY.format(run="python train.py"), "train.py": TRAIN, "prepare.py": ""})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert lay.unresolved and "2 nodes" in lay.unresolved and "LAY017" in found


def test_skypilot_bare_python_on_one_node_keeps_the_trap(tmp_path, monkeypatch):
    text = SKY.format(run="python train.py").replace("num_nodes: 2", "num_nodes: 1")
    _repo(tmp_path, {"sky.yaml": text, "train.py": TRAIN, "prepare.py": ""})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert lay.num_processes == 1 and "LAY003" in found


# --- Slurm -------------------------------------------------------------------------------------

SLURM = """\
#!/bin/bash
#SBATCH --job-name=grpo
#SBATCH --nodes=2
#SBATCH --ntasks-per-node={tasks}
#SBATCH --gres=gpu:h100:8
#SBATCH --exclusive

source .venv/bin/activate
{run}
"""


def test_slurm_srun_torchrun_one_task_per_node(tmp_path, monkeypatch):
    run = "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 src/train.py"
    _repo(tmp_path, {"slurm/train.slurm": SLURM.format(tasks=1, run=run), "src/train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job.gpus_per_node == 8
    assert (lay.num_processes, lay.num_machines) == (8, 2) and "LAY003" not in found


def test_slurm_srun_copies_of_python_are_up_to_the_script(tmp_path, monkeypatch):
    _repo(tmp_path, {"train.sbatch": SLURM.format(tasks=8, run="srun python train.py"), "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert lay.unresolved and "16 copies" in lay.unresolved
    assert "LAY017" in found and "LAY003" not in found


def test_srun_inside_an_allocation_takes_the_exported_counts():
    text = SLURM.format(tasks=4, run="srun torchrun --nproc_per_node 2 train.py")
    from envdoctor.plan.launchers.sbatch import allocation_env, sbatch_options

    env = allocation_env(sbatch_options(text))
    assert env["SLURM_NTASKS_PER_NODE"] == "4" and env["SLURM_NNODES"] == "2"
    exports = "".join(f"export {k}={v}\n" for k, v in env.items())
    (launch,) = parse_launches(exports + "srun torchrun --nproc_per_node 2 train.py")
    assert launch.unresolved and "4 copies of torchrun" in launch.unresolved
    (plain,) = parse_launches("srun torchrun --nproc_per_node 2 train.py")
    assert plain.unresolved is None  # outside an allocation: one task per node


# --- Kubeflow ----------------------------------------------------------------------------------

PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: grpo
spec:
  nprocPerNode: "{nproc}"
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/example/grpo:latest
              command: [{command}]
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/example/grpo:latest
              command: [{command}]
"""


def test_kubeflow_pytorchjob_torchrun_reads_pet_variables(tmp_path, monkeypatch):
    text = PYTORCHJOB.format(nproc=8, command='"torchrun", "/app/train.py"')
    _repo(tmp_path, {"k8s/job.yaml": text, "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert (lay.num_processes, lay.num_machines) == (8, 2) and "LAY003" not in found


def test_kubeflow_trainjob(tmp_path, monkeypatch):
    text = """\
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata:
      name: grpo
    spec:
      runtimeRef:
        name: torch-distributed
      trainer:
        numNodes: 2
        numProcPerNode: 4
        command: ["torchrun", "train.py"]
        resourcesPerNode:
          limits:
            nvidia.com/gpu: 4
    """
    _repo(tmp_path, {"trainjob.yaml": text, "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py", gpus=4)
    assert (lay.num_processes, lay.num_machines) == (4, 2) and "LAY003" not in found


def test_kubeflow_plain_python_on_a_multi_gpu_pod_is_unknown(tmp_path, monkeypatch):
    text = PYTORCHJOB.format(nproc=8, command='"python", "/app/train.py"')
    _repo(tmp_path, {"job.yaml": text, "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert lay.unresolved and "LAY017" in found and "LAY003" not in found


# --- Modal and Hugging Face Jobs ---------------------------------------------------------------


def test_modal_function_with_a_literal_launch(tmp_path, monkeypatch):
    code = (
        "import subprocess\nimport modal\napp = modal.App('grpo')\n"
        "@app.function(gpu='H100:8', timeout=86400)\n"
        "def train():\n"
        "    subprocess.run(['accelerate', 'launch', '--num_processes', '8', 'train.py'], check=True)\n"
    )
    _repo(tmp_path, {"modal_app.py": code, "train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert plan.job.gpus_per_node == 8 and lay.num_processes == 8 and "LAY003" not in found


MODAL_IN_PROCESS = """\
import os
import modal

GPU = {gpu}
image = modal.Image.debian_slim().pip_install("trl==0.24.0", "transformers==5.2.0")
app = modal.App("grpo")


@app.function(gpu=GPU, image=image)
def train(stage: int = 1):
    from training.stage import main

    main()


@app.local_entrypoint()
def entry(stage: int = 1):
    train.remote(stage=stage)
"""
STAGE = (
    "from trl import GRPOConfig, GRPOTrainer\n\n\n"
    "class MyTrainer(GRPOTrainer):\n"
    "    def _generate_and_score_completions(self, inputs, mode):\n"
    "        return super()._generate_and_score_completions(inputs)\n\n\n"
    "def main():\n"
    "    MyTrainer(model='m', reward_funcs=[len], args=GRPOConfig('o')).train()\n"
)


@pytest.mark.parametrize("gpu", ["'A100-40GB'", "os.getenv('TRAIN_GPU', 'A100')"], ids=["literal", "env"])
def test_modal_run_of_an_app_that_trains_in_its_own_process(tmp_path, monkeypatch, gpu):
    """Set 18's A100-Kernel-RL: `modal run modal_train.py --stage 1`, whose function imports the
    training code and calls it (no command started): the app's file is the training script, its
    imports followed (here: an override TRL 0.29 does not call that way, CFG011)."""
    _repo(
        tmp_path,
        {
            "modal_train.py": MODAL_IN_PROCESS.format(gpu=gpu),
            "training/__init__.py": "",
            "training/stage.py": STAGE,
        },
    )
    monkeypatch.chdir(tmp_path)
    plan = build_plan(launch="modal run modal_train.py --stage 1", live=False)
    assert plan.script is not None and plan.script.path == "modal_train.py" and not plan.script.problem
    assert any(o.method == "_generate_and_score_completions" for o in plan.script.trl_overrides)
    assert plan.job is not None and plan.job.in_process
    if gpu.startswith("'"):
        assert plan.job.gpus_per_node == 1 and not plan.trainer.unresolved
    else:
        assert plan.trainer.unresolved and "not a literal" in plan.trainer.unresolved


def test_hf_jobs_run_job(tmp_path, monkeypatch):
    code = (
        "from huggingface_hub import run_job\n"
        "run_job(image='pytorch/pytorch:latest', flavor='a100x4',\n"
        "        command=['torchrun', '--nproc_per_node', '4', 'train.py'])\n"
    )
    _repo(tmp_path, {"submit.py": code, "train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "python train.py", gpus=4)
    assert plan.job.gpus_per_node == 4 and lay.num_processes == 4 and "LAY003" not in found


# --- what stays as it was ----------------------------------------------------------------------


def test_a_job_for_another_script_changes_nothing(tmp_path, monkeypatch):
    _repo(tmp_path, {"job.yml": AML_YAML.replace("train.py", "eval.py"), "src/train.py": TRAIN})
    plan, _, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job is None and "LAY003" in found


def test_a_launcher_line_is_never_second_guessed(tmp_path, monkeypatch):
    _repo(tmp_path, {"job.yml": AML_YAML, "src/train.py": TRAIN})
    plan, lay, found = _check(tmp_path, monkeypatch, "torchrun --nproc_per_node 2 src/train.py")
    assert plan.job is None and lay.num_processes == 2


def test_declarations_that_disagree_leave_the_count_unknown(tmp_path, monkeypatch):
    _repo(
        tmp_path,
        {
            "job.yml": AML_YAML,
            "job_small.yml": AML_YAML.replace(
                "process_count_per_instance: 8", "process_count_per_instance: 2"
            ),
            "src/train.py": TRAIN,
        },
    )
    _, lay, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert lay.unresolved and "disagree" in lay.unresolved and "LAY003" not in found


@pytest.mark.parametrize("bad", ["command: [unclosed", "{{{", "\x00\x01", "distribution: 5\ncommand: 7"])
def test_unreadable_declarations_declare_nothing(tmp_path, monkeypatch, bad):
    _repo(tmp_path, {"job.yml": "process_count_per_instance: 8\n" + bad, "src/train.py": TRAIN})
    plan, _, found = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job is None and "LAY003" in found


def test_check_cli_in_a_git_repository(tmp_path):
    """As a pre-commit hook runs it: from the repository's root, the job beside the code."""
    import subprocess

    _repo(tmp_path, {"job.yml": AML_YAML, "src/train.py": TRAIN, "config.yaml": "use_vllm: false\n"})
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(8)))
    args = ["check", "--format", "json", "--facts", "facts.json", "--config", "config.yaml"]
    got = run_cli(*args, "--", "python", "src/train.py", cwd=tmp_path)
    rules = {f["rule"]: f["severity"] for f in json.loads(got.stdout)["findings"]}
    assert rules.get("LAY018") == "info" and "LAY003" not in rules
    text = run_cli("check", *args[3:], "--", "python", "src/train.py", cwd=tmp_path).stdout
    assert "GPU layout (Azure ML command job (job.yml: 8 processes per node on 2 nodes)" in text
    (tmp_path / "job.yml").unlink()
    got = run_cli(*args, "--", "python", "src/train.py", cwd=tmp_path)
    rules = {f["rule"]: f["severity"] for f in json.loads(got.stdout)["findings"]}
    assert rules.get("LAY003") in ("error", "warning") and "LAY018" not in rules


def test_sbatch_line_runs_the_batch_script_in_its_allocation(tmp_path, monkeypatch):
    run = "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 train.py"
    _repo(tmp_path, {"job.slurm": SLURM.format(tasks=1, run=run), "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "sbatch job.slurm")
    assert (lay.num_processes, lay.num_machines, lay.world_size) == (8, 2, 16)
    _, lay, _ = _check(tmp_path, monkeypatch, "sbatch --nodes 4 job.slurm")  # the command line wins
    assert lay.num_machines == 4
    # the script's text given as the launch: its #SBATCH lines are its allocation
    _, lay, _ = _check(tmp_path, monkeypatch, (tmp_path / "job.slurm").read_text())
    assert (lay.num_processes, lay.num_machines) == (8, 2)


def test_sbatch_of_a_script_that_is_not_here_stays_unknown(tmp_path, monkeypatch):
    _repo(tmp_path, {"train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "sbatch missing.slurm")
    assert lay.unresolved and "sbatch" in lay.unresolved and "LAY003" not in found


def test_an_alias_bomb_declares_nothing_and_is_not_expanded(tmp_path, monkeypatch):
    lines = [
        "command: python train.py",
        "distribution: {type: pytorch}",
        'a0: &a0 ["x","x","x","x","x","x","x","x"]',
    ]
    lines += [f"a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * 8)}]" for i in range(1, 12)]
    _repo(tmp_path, {"job.yml": "\n".join(lines) + "\n", "src/train.py": TRAIN})
    plan, _, _ = _check(tmp_path, monkeypatch, "python src/train.py")
    assert plan.job is None


def test_hook_judges_a_config_by_the_processes_its_job_starts(tmp_path):
    """No launch line given: the hook's recipe for grpo.yaml is the job that passes it (the
    global batch of CFG002), 8 processes on one node, then 16 on two."""
    import subprocess

    job = AML_YAML.replace(
        "python train.py --output_dir ${{outputs.out}}", "python train.py --config grpo.yaml"
    )
    grpo = "num_generations: 16\nper_device_train_batch_size: 1\nuse_vllm: false\nlearning_rate: 1.0e-6\n"
    _repo(tmp_path, {"job.yml": job.replace("instance_count: 2", "instance_count: 1"), "grpo.yaml": grpo})
    (tmp_path / "requirements.txt").write_text("trl==1.2.0\n")
    (tmp_path / "train.py").write_text(TRAIN)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    got = run_cli("hook", "grpo.yaml", cwd=tmp_path)
    assert got.returncode == 1 and "CFG002" in got.stdout and "processes (8)" in got.stdout
    _repo(tmp_path, {"job.yml": job})
    got = run_cli("hook", "grpo.yaml", cwd=tmp_path)
    assert got.returncode == 0 and "CFG002" not in got.stdout


def test_kubeflow_trainjob_without_its_count_leaves_it_to_the_runtime(tmp_path, monkeypatch):
    text = "kind: TrainJob\nspec:\n  runtimeRef: {name: torch-distributed}\n  trainer:\n"
    text += "    numNodes: 1\n    command: [torchrun, train.py]\n"
    _repo(tmp_path, {"trainjob.yaml": text, "train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python train.py")
    assert lay.unresolved and "torch-distributed" in lay.unresolved and "LAY017" in found


def test_sagemaker_model_trainer_torchrun(tmp_path, monkeypatch):
    code = (
        "from sagemaker.train import ModelTrainer\n"
        "from sagemaker.train.configs import Compute, SourceCode\n"
        "from sagemaker.train.distributed import Torchrun\n"
        "trainer = ModelTrainer(training_image=image,\n"
        "    source_code=SourceCode(source_dir='./scripts', entry_script='train.py'),\n"
        "    compute=Compute(instance_type='ml.g6e.12xlarge', instance_count=2),\n"
        "    distributed=Torchrun())\n"
    )
    _repo(tmp_path, {"launch.py": code, "scripts/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python scripts/train.py", gpus=4)
    assert (lay.num_processes, lay.num_machines) == (4, 2) and "LAY003" not in found
    _repo(tmp_path, {"launch.py": code.replace("Torchrun()", "Torchrun(process_count_per_node=2)")})
    _jobs_for.cache_clear()
    _, lay, _ = _check(tmp_path, monkeypatch, "python scripts/train.py", gpus=4)
    assert lay.num_processes == 2
    _repo(tmp_path, {"launch.py": code.replace(",\n    distributed=Torchrun())", ")")})
    _jobs_for.cache_clear()
    _, lay, found = _check(tmp_path, monkeypatch, "python scripts/train.py", gpus=4)
    assert lay.unresolved and "2 nodes" in lay.unresolved  # one python per instance, not one job


def test_a_job_on_bigger_instances_than_this_machine_is_not_judged_here(tmp_path, monkeypatch):
    """A check on a two-GPU workstation of a repository whose job asks for 8 per node: the
    job's processes are not squeezed onto this machine's GPUs (no LAY004), nor judged as one
    process (no LAY003); LAY017 says why."""
    _repo(tmp_path, {"job.yml": AML_YAML, "src/train.py": TRAIN})
    _, lay, found = _check(tmp_path, monkeypatch, "python src/train.py", gpus=2)
    assert lay.unresolved and "this machine shows 2 GPU(s)" in lay.unresolved
    assert not {"LAY003", "LAY004", "LAY018"} & set(found) and "LAY017" in found


def test_job_cli_lines_run_the_declared_job(tmp_path, monkeypatch):
    """A launcher's command line that submits a declaration (sky launch, az ml job create,
    kubectl apply) runs the job's launch line with the job's counts, not an unknown program."""
    run = "torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE train.py"
    _repo(
        tmp_path,
        {
            "sky.yaml": SKY.format(run=run),
            "job.yml": AML_YAML.replace("code: src", "code: ."),
            "k8s.yaml": PYTORCHJOB.format(nproc=8, command='"torchrun", "train.py"'),
            "train.py": TRAIN,
            "prepare.py": "",
        },
    )
    for line in (
        "sky launch -c grpo sky.yaml",
        "az ml job create --file job.yml",
        "kubectl apply -f k8s.yaml",
    ):
        plan, lay, found = _check(tmp_path, monkeypatch, line)
        assert (lay.num_processes, lay.num_machines) == (8, 2), line
        assert "LAY003" not in found
    _repo(tmp_path, {"job.yml": AML_YAML.replace("type: pytorch", "type: mpi")})
    _jobs_for.cache_clear()
    _, lay, found = _check(tmp_path, monkeypatch, "az ml job create --file job.yml")
    assert lay.unresolved and "mpi" in lay.unresolved and "LAY017" in found
    _, lay, _ = _check(tmp_path, monkeypatch, "sky launch missing.yaml")
    assert lay.unresolved and "sky" in lay.unresolved  # not a file: the unknown program, as before


def test_torchrun_takes_the_pet_variables_for_options_it_is_not_given(tmp_path, monkeypatch):
    _repo(tmp_path, {"train.py": TRAIN})
    _, lay, _ = _check(tmp_path, monkeypatch, "PET_NPROC_PER_NODE=4 PET_NNODES=2 torchrun train.py")
    assert (lay.num_processes, lay.num_machines) == (4, 2)
    _, lay, _ = _check(tmp_path, monkeypatch, "PET_NPROC_PER_NODE=4 torchrun --nproc_per_node 2 train.py")
    assert lay.num_processes == 2  # the option wins
