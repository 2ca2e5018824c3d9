"""LAY015, LAY016 and CFG009 beyond their fires / stays-quiet scenarios: the classes the fourth
held-out set's setups missed (huggingface/trl#3208, unslothai/unsloth#2685, om-ai-lab/VLM-R1#206
and Wang-Xiaodong1899/Open-R1-Video#21), each at its mechanism and its release boundaries."""

from __future__ import annotations

import json

from tests.conftest import MODERN, findings, snapshot

SERVER = {"use_vllm": True, "vllm_mode": "server"}


def _rule(found, rule):
    return [f for f in found if f.rule == rule]


# --- LAY015: GPUs given to the trainer that no rank takes -------------------------------------


def test_lay015_accelerate_deepspeed_one_process_beside_a_server_is_a_warning(tmp_path):
    """The run trains correctly on the GPUs its ranks take: idle capacity, not a failure (set 23's
    Illusion-of-Reasoning: 6 ranks for 7 visible GPUs beside a server, a healthy run)."""
    acc = tmp_path / "acc.yaml"
    acc.write_text("distributed_type: DEEPSPEED\nnum_processes: 1\ndeepspeed_config:\n  zero_stage: 2\n")
    launch = (
        "CUDA_VISIBLE_DEVICES=3 trl vllm-serve --model m ; "
        f"CUDA_VISIBLE_DEVICES=0,1,2 accelerate launch --config_file {acc} train.py"
    )
    (f,) = _rule(findings(snapshot(4), config=SERVER, launch=launch), "LAY015")
    assert f.severity.value == "warning" and f.evidence["idle"] == [1, 2]
    assert f.remedy is not None and f.remedy.launch is not None
    assert "--num_processes 3" in f.remedy.launch[-1]


def test_lay015_without_a_server_is_a_warning(tmp_path):
    found = findings(snapshot(4), launch="CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 1 train.py")
    (f,) = _rule(found, "LAY015")
    assert f.severity.value == "warning"


def test_lay015_quiet_when_every_gpu_is_visible_by_default_or_used_by_vllm():
    # no CUDA_VISIBLE_DEVICES: the launch did not choose the GPUs (a machine shared by jobs)
    assert not _rule(findings(snapshot(4), launch="torchrun --nproc_per_node 1 train.py"), "LAY015")
    # TRL 0.15's vllm_device: the GPU after the ranks is vLLM's, inside the visible set
    legacy = {"use_vllm": True, "vllm_device": "auto"}
    found = findings(
        snapshot(4, packages={"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1"}),
        config=legacy,
        launch="CUDA_VISIBLE_DEVICES=0,1,2,3 accelerate launch --num_processes 3 train.py",
    )
    assert not _rule(found, "LAY015")


def test_lay015_quiet_when_the_config_places_an_in_process_engine_on_the_extra_gpu():
    # a fork of TRL that keeps vllm_device, running as 0.17: the idle GPU is the engine's; whether
    # the installed TRL honours the key is CFG001's to say, not a GPU left idle
    found = findings(
        snapshot(7, packages={"trl": "0.17.0", "vllm": "0.8.5", "torch": "2.6.0"}),
        config={"use_vllm": True, "vllm_device": "cuda:6"},
        launch="CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 accelerate launch --num_processes 6 train.py",
    )
    assert not _rule(found, "LAY015")


# --- LAY016: Unsloth's in-process vLLM with a server configured ---------------------------------

UNSLOTH = (
    "from unsloth import FastLanguageModel\n"
    "m, t = FastLanguageModel.from_pretrained('m', fast_inference={})\n"
)


def _lay016(tmp_path, trl: str, fast: str = "True", config: dict | None = None, server: bool = True):
    script = tmp_path / "train.py"
    script.write_text(UNSLOTH.format(fast))
    launch = f"CUDA_VISIBLE_DEVICES=0 python {script}"
    if server:
        launch = "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m ; " + launch
    snap = snapshot(2, packages={**MODERN, "trl": trl})
    return _rule(findings(snap, config=config or SERVER, launch=launch), "LAY016")


def test_lay016_error_from_trl_0_18_with_a_remedy_that_drops_the_server(tmp_path):
    (f,) = _lay016(tmp_path, "0.18.2")
    assert f.severity.value == "error" and "fast_inference" in f.message
    assert f.remedy is not None and f.remedy.config_set == {"vllm_mode": "colocate"}
    assert f.remedy.launch is not None and not any("vllm-serve" in line for line in f.remedy.launch)


def test_lay016_before_vllm_mode_is_a_warning(tmp_path):
    (f,) = _lay016(tmp_path, "0.17.0", config={"use_vllm": True})
    assert f.severity.value == "warning"


def test_lay016_quiet_without_fast_inference_or_without_a_server(tmp_path):
    assert _lay016(tmp_path, "0.18.2", fast="False") == []
    assert _lay016(tmp_path, "0.18.2", config={"use_vllm": True, "vllm_mode": "colocate"}, server=False) == []


# --- CFG009: a frozen reference model, DeepSpeed's optimizer section, ZeRO below 3 --------------

DS = {"bf16": {"enabled": "auto"}, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
TRAIN = "from trl import GRPOTrainer\nGRPOTrainer(model='m', reward_funcs=[len])\n"


def _cfg009(
    tmp_path, trl: str, stage: int = 2, config: dict | None = None, ds: dict | None = None, script=TRAIN
):
    (tmp_path / "ds.json").write_text(json.dumps({**(ds or DS), "zero_optimization": {"stage": stage}}))
    (tmp_path / "train.py").write_text(script)
    cfg = {"deepspeed": str(tmp_path / "ds.json"), "bf16": True, **(config or {})}
    snap = snapshot(2, packages={**MODERN, "trl": trl})
    return _rule(
        findings(snap, config=cfg, launch=f"torchrun --nproc_per_node 2 {tmp_path}/train.py"), "CFG009"
    )


def test_cfg009_trl_grpo_trainer_up_to_1_9_0_is_an_error(tmp_path):
    (f,) = _cfg009(tmp_path, "0.16.0", config={"beta": 0.04})
    assert f.severity.value == "error" and f.evidence["zero_stage"] == 2
    assert f.remedy is not None and f.remedy.packages == {"trl": "1.9.1"}
    (f,) = _cfg009(tmp_path, "1.9.0", stage=1, config={"beta": 0.1})
    assert f.severity.value == "error"


def test_cfg009_quiet_where_no_optimizer_is_built_over_a_frozen_model(tmp_path):
    assert _cfg009(tmp_path, "1.9.1", config={"beta": 0.04}) == []  # the section is dropped
    assert _cfg009(tmp_path, "0.16.0", stage=3, config={"beta": 0.04}) == []
    assert _cfg009(tmp_path, "0.19.0") == []  # beta 0.0 by default: no reference model
    assert _cfg009(tmp_path, "0.16.0", config={"beta": 0.04, "use_peft": True}) == []
    assert (
        _cfg009(tmp_path, "0.16.0", config={"beta": 0.04}, ds={"optimizer": {"type": "AdamW"}}) == []
    )  # fp32
    assert (
        _cfg009(tmp_path, "0.16.0", config={"beta": 0.04}, ds={"bf16": {"enabled": True}}) == []
    )  # no section


def test_cfg009_trl_0_15_builds_a_reference_model_whatever_beta(tmp_path):
    (f,) = _cfg009(tmp_path, "0.15.2", config={"beta": 0.0})
    assert f.severity.value == "error" and "whenever no PEFT adapter" in f.message


def test_cfg009_a_project_trainer_that_calls_prepare_deepspeed_itself(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "trainer.py").write_text(
        "from transformers import Trainer\nfrom trl.models import prepare_deepspeed\n"
        "class VLMTrainer(Trainer):\n    def __init__(self, ref_model=None, **kw):\n"
        "        self.ref_model = prepare_deepspeed(self.ref_model, self.accelerator)\n"
    )
    script = "from proj.trainer import VLMTrainer\ntrainer = VLMTrainer(model='m')\n"
    (f,) = _cfg009(tmp_path, "0.16.0", config={"beta": 0.04}, script=script)
    assert f.severity.value == "error" and "trainer.py:5" in f.message


def test_cfg009_a_trainer_whose_source_is_not_here_is_advice(tmp_path):
    """It rests on a trainer envdoctor could not read: advice (issue #35)."""
    script = (
        "from open_r1.trainer import Qwen2VLGRPOTrainer\n"
        "trainer_cls = Qwen2VLGRPOTrainer\ntrainer_cls(model='m')\n"
    )
    (f,) = _cfg009(tmp_path, "0.16.0", config={"beta": 0.1}, script=script)
    assert f.severity.value == "info" and "Qwen2VLGRPOTrainer" in f.message


def test_cfg009_fp16_is_a_warning(tmp_path):
    # FP16_Optimizer filters the trainable parameters only in newer DeepSpeed releases
    ds = {"fp16": {"enabled": True}, "optimizer": {"type": "AdamW"}}
    (f,) = _cfg009(tmp_path, "0.16.0", config={"beta": 0.04, "bf16": False}, ds=ds)
    assert f.severity.value == "warning"


# --- LAY006: a server the trainer asks on another machine ---------------------------------------


def test_lay006_quiet_when_the_trainer_asks_a_server_on_another_host():
    """A multi-node recipe starts `trl vllm-serve` on a node of its own and points the trainer at
    it (vllm_server_host): the server line's GPUs are that node's, not the trainer's; the same
    lines with the server on this machine share GPUs 0-7 with the training ranks."""
    launch = (
        "trl vllm-serve --model m --tensor_parallel_size 8 ; accelerate launch --num_processes 8 train.py"
    )
    config = {"use_vllm": True, "vllm_mode": "server"}
    for host in ("10.0.0.9", "$VLLM_NODE", "<VLLM_NODE>"):
        found = findings(snapshot(8), config={**config, "vllm_server_host": host}, launch=launch)
        assert not _rule(found, "LAY006"), host
    local = findings(snapshot(8), config={**config, "vllm_server_host": "localhost"}, launch=launch)
    assert _rule(local, "LAY006")


# --- LAY006: vLLM's share lowered on purpose -----------------------------------------------------


def test_lay006_a_lowered_share_is_a_warning_not_an_error():
    """TRL 0.15's legacy mode with vllm_device on the training GPU: at TRL's 0.9 training gets a
    tenth of the GPU (an error); a share the user lowered to 0.6 leaves training 40 %, enough for a
    small model (held-out set 19: a 0.5B LoRA run trained 2349 steps on one A100 40GB), so
    whether it fits is the model's: a warning; at 0.5 or below it is a deliberate share (info)."""
    packages = {**MODERN, "trl": "0.15.1", "vllm": "0.7.3", "torch": "2.5.1"}
    cfg = {"use_vllm": True, "vllm_device": "cuda:0"}
    launch = "python train.py"
    for util, severity in ((None, "error"), (0.6, "warning"), (0.45, "info")):
        config = cfg if util is None else {**cfg, "vllm_gpu_memory_utilization": util}
        found = _rule(findings(snapshot(1, packages=packages), config=config, launch=launch), "LAY006")
        assert found and found[0].severity.value == severity, (util, found)


def test_lay015_quiet_where_the_script_decides_whether_vllm_runs(tmp_path):
    """TRL 0.15 places its in-process vLLM on the GPU after the ranks: with use_vllm computed by
    the script, that GPU may be vLLM's, so it is not said idle (the layout has no mode then)."""
    script = tmp_path / "train.py"
    body = (
        "import os\nfrom trl import GRPOConfig, GRPOTrainer\n"
        "args = GRPOConfig(output_dir='o', use_vllm={})\n"
        "GRPOTrainer(model='m', args=args, reward_funcs=[])\n"
    )
    launch = f"CUDA_VISIBLE_DEVICES=0,1,2,3 accelerate launch --num_processes 3 {script}"
    snap = snapshot(4, packages={"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1"})
    script.write_text(body.format("False"))
    assert _rule(findings(snap, launch=launch), "LAY015")  # off: the GPU is idle
    script.write_text(body.format("os.environ.get('VLLM') == '1'"))
    assert not _rule(findings(snap, launch=launch), "LAY015")
