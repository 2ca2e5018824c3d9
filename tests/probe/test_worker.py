"""The probe's worker on its own: run as a plain script, feature detection across TRL versions."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import types

import pytest

from envdoctor.probe.run.runner import WORKER


@pytest.fixture(scope="module")
def worker():
    spec = importlib.util.spec_from_file_location("envdoctor_probe_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # stdlib only at import: cheap
    return module


def _run_by_hand(tmp_path, timeout: float = 60, **spec) -> tuple[int, dict, dict | None]:
    (tmp_path / "spec.json").write_text(json.dumps({"out_dir": str(tmp_path), **spec}))
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    started = json.loads((tmp_path / "rank0.started.json").read_text())
    done = tmp_path / "rank0.json"
    assert not list(tmp_path.glob("*.tmp"))
    assert "ENVDOCTOR_PHASE rank=0 started" in proc.stderr
    return proc.returncode, started, json.loads(done.read_text()) if done.exists() else None


def test_a_crash_is_written_as_data_and_exits_nonzero(tmp_path):
    code, started, result = _run_by_hand(tmp_path, fault="crash")
    assert code == 1 and started["rank"] == 0 and started["world_size"] == 1
    assert {"pid", "local_rank", "cuda_visible_devices", "t_start"} <= set(started)
    assert result["ok"] is False and result["error"]["type"] == "RuntimeError"
    assert "injected crash" in result["error"]["message"]
    assert "Traceback" in result["error"]["traceback"]
    assert len(result["error"]["traceback"].splitlines()) <= 60
    assert result["peak_rss_mib"] > 0 and "total" in result["phases"]


def test_an_exit_leaves_only_the_started_record(tmp_path):
    code, started, result = _run_by_hand(tmp_path, fault="exit")
    assert code == 3 and started["pid"] > 0 and result is None


def test_config_keeps_only_the_fields_this_trl_has(worker, monkeypatch, tmp_path):
    """An old GRPOConfig (TRL 0.15: vllm_device, no vllm_mode) gets only what it knows."""

    @dataclasses.dataclass
    class OldGRPOConfig:
        output_dir: str
        max_steps: int = -1
        per_device_train_batch_size: int = 8
        num_generations: int = 8
        max_completion_length: int = 256
        bf16: bool = False
        fp16: bool = False
        use_cpu: bool = False
        use_vllm: bool = False
        vllm_device: str = "auto"
        report_to: str = "all"
        save_strategy: str = "steps"

    monkeypatch.setitem(sys.modules, "trl", types.SimpleNamespace(GRPOConfig=OldGRPOConfig))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())
    cfg, ignored = worker._config(
        {
            "steps": 1,
            "num_generations": 4,
            "per_device_train_batch_size": 4,
            "bf16": True,
            "use_vllm": True,
            "vllm_mode": "colocate",
            "vllm": {"vllm_device": "cuda:1", "vllm_enable_sleep_mode": True},
        },
        str(tmp_path),
        cuda=False,
    )
    assert ignored == ["vllm_enable_sleep_mode"]  # TRL 0.15 has no sleep mode: said, not passed
    assert (cfg.max_steps, cfg.num_generations, cfg.per_device_train_batch_size) == (1, 4, 4)
    assert cfg.use_cpu and not cfg.bf16 and not cfg.fp16  # CPU: no mixed precision
    assert cfg.use_vllm and cfg.vllm_device == "cuda:1" and cfg.report_to == "none"
    assert cfg.save_strategy == "no" and cfg.max_completion_length == 8


def test_tiny_models_build_offline_for_both_families(worker):
    pytest.importorskip("transformers")
    import torch

    tok = worker._tokenizer()
    ids = tok(["the cat sat on the"], return_tensors="pt")["input_ids"]
    assert tok.pad_token_id == 0 and tok.eos_token_id == 1 and ids.shape == (1, 5)
    for family in ("qwen2", "llama"):
        model = worker._model(family, tok)
        n = sum(p.numel() for p in model.parameters())
        assert 10_000 < n < 1_000_000, (family, n)
        with torch.no_grad():
            assert model(ids).logits.shape == (1, 5, len(tok))


def test_the_in_process_vllm_runs_eager_unless_the_caller_says_otherwise(worker, monkeypatch):
    """TRL builds LLM() without enforce_eager; the probe's tiny model gets no torch.compile and
    no CUDA-graph capture (time, and faults that are the tiny model's: PRB018)."""
    made = []

    class LLM:
        def __init__(self, model, **kwargs):
            made.append(kwargs)

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    monkeypatch.setitem(sys.modules, "vllm", fake)
    result: dict = {}
    worker.eager_vllm(result)
    from vllm import LLM as Patched  # what TRL's `from vllm import LLM` gets afterwards

    Patched("/tmp/model", gpu_memory_utilization=0.3, max_num_seqs=8)
    assert made[-1] == {"gpu_memory_utilization": 0.3, "max_num_seqs": 8, "enforce_eager": True}
    assert result["vllm_enforce_eager"] is True and issubclass(Patched, LLM)
    assert Patched.__name__ == "LLM"
    Patched("/tmp/model", enforce_eager=False)  # a TRL that passes it keeps its value
    assert made[-1] == {"enforce_eager": False} and result["vllm_enforce_eager"] is False


def test_no_vllm_is_left_to_trl(worker, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails
    result: dict = {}
    worker.eager_vllm(result)
    assert result == {}


def test_a_lora_run_trains_its_adapters_in_the_probe(tmp_path):
    """use_peft: the probe's trainer is a PEFT model with the user's LoRA, and the adapters get
    the gradients (a real GRPO step on the CPU)."""
    pytest.importorskip("peft")
    pytest.importorskip("trl")
    peft = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    code, _started, result = _run_by_hand(
        tmp_path, peft=peft, per_device_train_batch_size=2, num_generations=2, timeout=120
    )
    assert code == 0, result
    assert result["peft"] == peft and result["wrapper"].startswith("Peft")
    assert result["grad_devices"] == ["cpu"] and result["loss_finite"]
