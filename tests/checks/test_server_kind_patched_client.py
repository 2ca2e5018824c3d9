"""LAY012 where the training script replaces TRL's VLLMClient calls: mentor-rl (set 24) assigns
``VLLMClient.init_communicator`` / ``update_named_param`` / ``generate`` (POSTing to vLLM's own
``/v1/completions``), so a plain ``vllm serve`` is its intended server; the error's fix (``trl
vllm-serve``, which has no ``/v1/completions``) would break it. Issue 35."""

from __future__ import annotations

from tests.conftest import MODERN, findings, snapshot

SERVER = {"use_vllm": True, "vllm_mode": "server"}
HEAD = "from trl import GRPOConfig, GRPOTrainer\n"
TRAINER = 'trainer = GRPOTrainer(model="m", args=GRPOConfig(output_dir="o"), reward_funcs=[])\n'
PATCHED = (
    HEAD
    + "from trl.extras import vllm_client\n\n\n"
    + "def skip(self, device=0):\n    return None\n\n\n"
    + "vllm_client.VLLMClient.init_communicator = skip\n"
    + 'setattr(vllm_client.VLLMClient, "update_named_param", skip)\n'
    + TRAINER
)
SUBCLASS = (
    HEAD
    + "from trl.extras.vllm_client import VLLMClient\n\n\n"
    + "class Mine(VLLMClient):\n    def init_communicator(self, device=0):\n        pass\n\n\n"
    + TRAINER
    + 'trainer.vllm_client = Mine(base_url="http://h:8000")\n'
)


def _lay012(tmp_path, script: str) -> list:
    (tmp_path / "train.py").write_text(script)
    snap = snapshot(2, packages={**MODERN, "trl": "0.19.0", "vllm": "0.11.0"})
    train = f"CUDA_VISIBLE_DEVICES=0 python {tmp_path / 'train.py'}"
    launch = f"CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Q ; {train}"
    return [f for f in findings(snap, config=SERVER, launch=launch) if f.rule == "LAY012"]


def test_a_plain_trl_client_keeps_the_error(tmp_path):
    (f,) = _lay012(tmp_path, HEAD + TRAINER)
    assert f.severity.value == "error" and "trl vllm-serve" in f.fix


def test_a_script_that_replaces_the_clients_methods_gets_info(tmp_path):
    (f,) = _lay012(tmp_path, PATCHED)
    assert f.severity.value == "info" and f.fix.startswith("nothing while")
    assert "init_communicator, update_named_param" in f.message and "train.py:" in f.message


def test_a_subclass_handed_to_the_trainer_gets_info(tmp_path):
    (f,) = _lay012(tmp_path, SUBCLASS)
    assert f.severity.value == "info" and "Mine" in f.message


def test_a_subclass_never_handed_to_the_trainer_keeps_the_error(tmp_path):
    (f,) = _lay012(tmp_path, SUBCLASS.replace('trainer.vllm_client = Mine(base_url="http://h:8000")\n', ""))
    assert f.severity.value == "error"
