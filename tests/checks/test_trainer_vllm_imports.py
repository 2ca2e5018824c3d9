"""PKG004 on vLLM's torch pin for a run of another TRL trainer (DPO, SFT) that never generates with
vLLM: whether that trainer's import path loads vLLM at all is read per TRL release
(rules/knowledge/trl_trainer_vllm.yaml, scripts/derive_trainer_vllm_imports.py). Issue #35, set 25:
dpo-exp-a88d5c3 (healthy) trained DPO in an image of vLLM 0.12.0 (built for torch 2.9.0) on torch
2.9.1 and got PKG004 at error, the launch being `docker run … IMAGE accelerate launch …`."""

from __future__ import annotations

from envdoctor.knowledge import Knowledge
from envdoctor.knowledge.requirements import trainer_vllm_imports
from envdoctor.plan.launch import parse_launches
from tests.conftest import findings, snapshot

#: dpo-exp's image: TRL 0.29.0, vLLM 0.12.0 pinned to torch 2.9.0, torch 2.9.1
IMAGE = {
    "trl": "0.29.0",
    "vllm": "0.12.0",
    "torch": "2.9.1",
    "transformers": "4.57.3",
    "accelerate": "1.12.0",
}
DPO = (
    "from trl import DPOConfig, DPOTrainer\n\n"
    "args = DPOConfig(output_dir='out')\n"
    "trainer = DPOTrainer(model='m', args=args, train_dataset=None)\n"
    "trainer.train()\n"
)


def _pkg004(tmp_path, packages: dict, launch: str | None = None) -> list:
    (tmp_path / "train.py").write_text(DPO)
    got = findings(
        snapshot(1, packages=packages), config={}, launch=launch or f"python {tmp_path / 'train.py'}"
    )
    return [f for f in got if f.rule == "PKG004" and f.message.startswith("vllm")]


def test_the_data_reads_the_trainers_import_path_per_release_and_installed_vllm():
    kb = Knowledge()
    # TRL 0.29's trl/_compat.py imports vLLM only below 0.11.1 / 0.12.0 (its own version tests)
    assert trainer_vllm_imports(kb, "0.29.0", "DPOTrainer", "0.12.0") == []
    assert trainer_vllm_imports(kb, "0.29.0", "DPOTrainer", "0.10.2")
    # TRL 0.26's trl/__init__.py imports vLLM whenever it is installed
    assert trainer_vllm_imports(kb, "0.26.2", "SFTTrainer", "0.12.0")
    assert trainer_vllm_imports(kb, "0.22.2", "SFTTrainer", "0.10.1") == []
    # outside the releases read, or a trainer not read: not known
    assert trainer_vllm_imports(kb, "9.0.0", "DPOTrainer", "0.12.0") is None
    assert trainer_vllm_imports(kb, "0.29.0", "NoSuchTrainer", "0.12.0") is None


def test_a_dpo_run_whose_trainer_loads_no_vllm_is_advice_and_says_so(tmp_path):
    (f,) = _pkg004(tmp_path, IMAGE)
    assert f.severity.value == "info"
    assert "DPOTrainer imports no vLLM module with vLLM 0.12.0 installed" in f.message
    assert "imports vLLM whenever it is installed" not in f.message  # GRPO's path is not this run's


def test_a_release_whose_dpo_path_imports_vllm_says_the_import(tmp_path):
    """TRL 0.26.2 imports vLLM in trl/__init__.py whenever it is installed: the import is said."""
    stack = {**IMAGE, "trl": "0.26.2", "vllm": "0.11.2", "torch": "2.9.1"}
    (f,) = _pkg004(tmp_path, stack)
    assert "DPOTrainer imports vLLM whenever it is installed" in f.message
    assert "imports no vLLM module" not in f.message


def test_the_run_inside_docker_run_is_read(tmp_path):
    """`docker run [options] IMAGE accelerate launch … train.py`: the command in the container is
    the trainer line (before: an unknown launcher, no script read, PKG004 at error)."""
    launch = (
        "docker run --rm --gpus all --ipc=host -v /data:/data -w /data/exp -e HF_HOME=/cache "
        f"dpo-harness accelerate launch --num_processes 1 {tmp_path / 'train.py'}"
    )
    (f,) = _pkg004(tmp_path, IMAGE, launch)
    assert f.severity.value == "info"
    (lx,) = parse_launches(launch)
    assert lx.launcher == "accelerate" and lx.env.get("HF_HOME") == "/cache"
    assert parse_launches("podman run -it img python train.py")[0].launcher == "python"
    entry = parse_launches("docker run --entrypoint accelerate img launch train.py")[0]
    assert entry.launcher == "accelerate"
    # a docker command that runs nothing of the run: no launcher found
    assert parse_launches("docker build -t img .")[0].launcher == "unknown"
