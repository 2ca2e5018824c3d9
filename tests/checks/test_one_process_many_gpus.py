"""LAY003: one training process that sees several GPUs, across TRL versions and launchers.

Measured on two H200s (docs/validation/split-model-h200x2.md, TRL 1.16): a model passed by path
is split over both GPUs with device_map="auto" and the step runs; a model object is refused.
"""

from __future__ import annotations

from tests.conftest import MODERN, findings, snapshot

COLOCATE = {"use_vllm": True, "vllm_mode": "colocate"}
SERVER = {"use_vllm": True, "vllm_mode": "server"}
TRL_GRPO = "trl grpo --num_processes 1 --model_name_or_path Qwen/Qwen2.5-0.5B"


def lay003(trl: str, config: dict, launch: str, n_gpus: int = 2):
    found = [
        f
        for f in findings(snapshot(n_gpus, packages={**MODERN, "trl": trl}), config, launch)
        if f.rule == "LAY003"
    ]
    return found[0] if found else None


def test_trl_grpo_splits_the_model_a_warning_with_one_rank_per_gpu():
    f = lay003("1.16.0", COLOCATE, TRL_GRPO)
    assert f.severity.value == "warning"
    assert 'device_map="auto"' in f.message and "one GPU at a time" in f.message
    assert "reserved for vLLM" not in f.message  # colocate shares the training GPU
    assert f.fix.startswith("trl grpo --num_processes 2 --model_name_or_path Qwen/Qwen2.5-0.5B")
    assert "CUDA_VISIBLE_DEVICES=0 trl grpo --num_processes 1" in f.fix


def test_trl_grpo_before_device_map_auto_is_the_silent_dataparallel():
    f = lay003("0.25.0", COLOCATE, TRL_GRPO)
    assert f.severity.value == "error" and "silently wrap" in f.message
    assert 'device_map="auto"' not in f.message


def test_trl_grpo_beside_a_server_gpu_stays_an_error_and_hides_that_gpu():
    launch = f"{TRL_GRPO} ; CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m"
    f = lay003("1.16.0", SERVER, launch)
    assert f.severity.value == "error"
    assert "GPU 1 reserved for vLLM" in f.message and "take memory vLLM needs" in f.message
    assert f.fix == "CUDA_VISIBLE_DEVICES=0 " + TRL_GRPO


def test_a_script_names_both_outcomes_on_modern_trl():
    f = lay003("1.16.0", SERVER, "python train.py")
    assert f.severity.value == "error"
    assert "refuses a model object" in f.message and 'device_map="auto"' in f.message
    old = lay003("1.0.0", SERVER, "python train.py")
    assert "silently wrap a model object" in old.message and 'device_map="auto"' in old.message


def test_colocate_reserves_no_gpu_in_the_message_or_the_fix():
    f = lay003("1.0.0", COLOCATE, "python train.py")
    assert "reserved for vLLM" not in f.message
    assert f.fix.startswith("torchrun --nproc_per_node 2 train.py")


def test_quiet_with_one_rank_per_gpu_or_one_gpu_visible():
    assert lay003("1.16.0", COLOCATE, TRL_GRPO.replace("--num_processes 1", "--num_processes 2")) is None
    assert lay003("1.16.0", COLOCATE, "CUDA_VISIBLE_DEVICES=0 " + TRL_GRPO) is None


def test_the_layout_table_shows_the_other_gpus_one_process_sees():
    from envdoctor.checks.context import Context
    from envdoctor.doctor import layout_rows
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    def roles(launch: str) -> list[str]:
        ctx = Context(
            facts=from_dict(snapshot(3, packages=MODERN), "t"),
            plan=build_plan(launch=launch, config_dict=COLOCATE, live=False),
        )
        return [row["role"] for row in layout_rows(ctx)]

    assert roles(TRL_GRPO) == ["rank 0 + vLLM (colocated)", "visible to rank 0 too", "visible to rank 0 too"]
    assert roles("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py") == [
        "rank 0 + vLLM (colocated)",
        "rank 1 + vLLM (colocated)",
        "idle",
    ]


def test_trls_own_grpo_script_run_by_python_passes_the_model_by_path():
    """`python trl/scripts/grpo.py` and `python -m trl.scripts.grpo` run what `trl grpo` runs
    (model_name_or_path): the split model is a warning as for `trl grpo`, not an error."""
    for launch in (
        "python trl/scripts/grpo.py --model_name_or_path Qwen/Qwen2.5-0.5B",
        "python -m trl.scripts.grpo --model_name_or_path Qwen/Qwen2.5-0.5B",
    ):
        f = lay003("1.16.0", COLOCATE, launch)
        assert f.severity.value == "warning" and 'device_map="auto"' in f.message, launch
        assert lay003("0.25.0", COLOCATE, launch).severity.value == "error"  # no split yet


def test_a_script_passing_the_model_by_name_is_split_not_wrapped(tmp_path, monkeypatch):
    """TRL's example scripts pass model_args.model_name_or_path to GRPOTrainer: on TRL 0.26+ one
    process on several GPUs splits the model (a warning, as for `trl grpo`); a script that
    builds the model object keeps the error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "by_name.py").write_text(
        "from trl import GRPOTrainer\nGRPOTrainer(model=model_args.model_name_or_path, args=a).train()\n"
    )
    (tmp_path / "by_object.py").write_text(
        "from trl import GRPOTrainer\nfrom transformers import AutoModelForCausalLM\n"
        "GRPOTrainer(model=AutoModelForCausalLM.from_pretrained('m'), args=a).train()\n"
    )
    f = lay003("1.9.0", COLOCATE, "python by_name.py")
    assert f.severity.value == "warning" and 'device_map="auto"' in f.message
    assert lay003("1.9.0", COLOCATE, "python by_object.py").severity.value == "error"
    assert lay003("0.25.0", COLOCATE, "python by_name.py").severity.value == "error"  # no split yet


# ---- the silent-wrap era with a GPU reserved for vLLM: severity by the memory plan -------------
LEGACY_014 = {
    "trl": "0.14.0",
    "transformers": "4.48.3",
    "torch": "2.5.1+cu124",
    "accelerate": "1.3.0",
    "vllm": "0.7.2",
}


def _legacy(config: dict, model_params: str | None = None, launch: str = "python train.py", gpus=None):
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    cfg = {"use_vllm": True, "vllm_device": "cuda:1", "bf16": True, **config}
    ctx = Context(
        facts=from_dict(snapshot(2, packages=LEGACY_014, model=gpus), "t"),
        plan=build_plan(launch=launch, config_dict=cfg, live=False),
        options={"model_params": model_params} if model_params else {},
    )
    found = [f for f in run_rules(ctx).findings if f.rule == "LAY003"]
    return found[0] if found else None


def test_published_healthy_share_0_4_and_a_1b_model_is_advice():
    """python train.py on 2 × H100 80 GB, TRL 0.14, vllm_device cuda:1 at 0.4, a 1B Llama (ran
    1500 steps): vLLM's share leaves the replica room; the plan says so, as info."""
    cfg = {"vllm_gpu_memory_utilization": 0.4, "per_device_train_batch_size": 4, "num_generations": 4}
    f = _legacy(cfg, model_params="1B")
    assert f.severity.value == "info", f.message
    assert "it fits, by the memory plan" in f.message
    assert "per_device_train_batch_size × 2" in f.message and "shared with generation" in f.message
    assert f.fix.startswith("torchrun --nproc_per_node 1 train.py")  # the advice stays
    # the size a local folder's name states is enough
    f = _legacy({**cfg, "model_name_or_path": "/models/Llama-3.2-1B-Instruct"})
    assert f.severity.value == "info"
    assert "model size from the name /models/Llama-3.2-1B-Instruct: 1B" in f.message


def test_default_share_or_a_big_model_is_an_error():
    # TRL's default 0.9, no model known: vLLM leaves a tenth (field reports 1-2)
    f = _legacy({"per_device_train_batch_size": 4, "num_generations": 4})
    assert f.severity.value == "error" and "0.9 (the default)" in f.message
    # a model known at the default share: the plan says the replica does not fit
    f = _legacy({"per_device_train_batch_size": 4, "num_generations": 4}, model_params="7B")
    assert f.severity.value == "error" and "runs out of memory there in the first steps" in f.message
    # a share set on purpose, a model too big for what it leaves
    f = _legacy({"vllm_gpu_memory_utilization": 0.4}, model_params="32B")
    assert f.severity.value == "error" and "before fragmentation" in f.message


def test_a_replica_that_fits_with_little_to_spare_is_a_warning():
    cfg = {"vllm_gpu_memory_utilization": 0.8, "max_completion_length": 256}
    f = _legacy({**cfg, "per_device_train_batch_size": 4, "num_generations": 4}, model_params="0.5B")
    assert f.severity.value == "warning" and "to spare" in f.message
    assert f.evidence["replica_bytes"] < f.evidence["room_bytes"]
    f = _legacy({**cfg, "per_device_train_batch_size": 2, "num_generations": 2}, model_params="0.5B")
    assert f.severity.value == "info"


def test_share_set_on_purpose_with_no_model_known_is_a_warning():
    f = _legacy({"vllm_gpu_memory_utilization": 0.4})
    assert f.severity.value == "warning"
    assert "the model's size is not known" in f.message and "LAY006" in f.message


def test_the_refusal_era_and_the_split_model_keep_their_severities():
    cfg = {"use_vllm": True, "vllm_mode": "server", "vllm_gpu_memory_utilization": 0.4}
    assert lay003("1.16.0", cfg, "python train.py").severity.value == "error"  # refused at init
    f = lay003("1.16.0", COLOCATE, TRL_GRPO)
    assert f.severity.value == "warning" and 'device_map="auto"' in f.message  # split, no vLLM GPU


def test_a_model_unsloth_loads_is_not_wrapped(tmp_path, monkeypatch):
    """Unsloth marks the model it loads so that Trainer does not wrap it in nn.DataParallel
    (is_loaded_in_8bit from 2025.3.2, _unsloth_disable_data_parallel later): one process on a
    Kaggle T4 x2 trains on one GPU (held-out set 19's WRAITH ran 750 steps that way, "Num GPUs used = 1"),
    so LAY003 is advice; before 2025.3.2, or without Unsloth, the wrap stays an error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(
        "from unsloth import FastLanguageModel\nfrom trl import GRPOConfig, GRPOTrainer\n"
        "model, tok = FastLanguageModel.from_pretrained('unsloth/Qwen2.5-1.5B-Instruct')\n"
        "GRPOTrainer(model=model, reward_funcs=[len], args=GRPOConfig()).train()\n"
    )

    def lay003_with(unsloth: str | None):
        extra = {"unsloth": unsloth} if unsloth else {}
        packages = {**MODERN, "trl": "1.3.0", **extra}
        found = [
            f for f in findings(snapshot(2, packages=packages), {}, "python train.py") if f.rule == "LAY003"
        ]
        return found[0] if found else None

    f = lay003_with("2026.4.8")
    assert f is not None and f.severity.value == "info" and "Unsloth" in f.message
    # it runs as is on one GPU: the change offered hides the others; DDP only as words (an Unsloth
    # before its multi-GPU support refuses several ranks)
    assert [r.launch for r in (f.remedy, *f.alternatives) if r] == [
        ("CUDA_VISIBLE_DEVICES=0 python train.py",)
    ]
    assert f.fix.startswith("CUDA_VISIBLE_DEVICES=0 python train.py  #") and "torchrun" in f.fix
    assert lay003_with("2025.2.15").severity.value == "error"
    assert lay003_with(None).severity.value == "error"  # not installed: nothing patches Trainer
