"""vLLM's own failure texts mapped to findings with the user's names (pure: text in, findings out).
The texts are vLLM 0.26.0's (vllm/v1/worker/utils.py, the sampler's import), as seen on H200."""

from __future__ import annotations

from pathlib import Path

from envdoctor.findings import Finding, Severity
from envdoctor.probe.judge.failures import VllmContext, classify_vllm

FREE = (
    "(EngineCore pid=913) ValueError: Free memory on device cuda:0 (28.77/139.8 GiB) on "
    "startup is less than desired GPU memory utilization (0.9, 125.82 GiB). Decrease GPU "
    "memory utilization or reduce GPU memory used by other processes."
)
FREE_OLD = (
    "ValueError: Free memory on device (61.05/119.7 GiB) on startup is less than desired "
    "GPU memory utilization (0.52, 62.24 GiB)."
)


def _ctx(**kw) -> VllmContext:
    return VllmContext(part="the probe vLLM server", **kw)


def test_free_memory_names_the_physical_gpu_and_its_holders():
    ctx = _ctx(
        visible=[1],
        cvd="1",
        holders={1: [(4242, "python3 holder.py", 112640), (77, "python3 other.py", 512)]},
    )
    (f,) = classify_vllm(FREE, ctx)
    assert f.rule == "PRB013" and f.severity.name == "ERROR"
    assert "on GPU 1 (cuda:0 of CUDA_VISIBLE_DEVICES=1)" in f.message
    assert "pid 4242 (python3 holder.py, 110.0 GiB)" in f.message
    assert f.message.index("4242") < f.message.index("pid 77")  # biggest holder first
    assert "below 0.19" in f.fix and f.evidence["gpu"] == 1


def test_free_memory_without_a_device_name_is_the_first_visible_gpu():
    (f,) = classify_vllm(FREE_OLD, _ctx(visible=[6, 7], cvd="6,7"))
    assert "GPU 6 (cuda:0 of CUDA_VISIBLE_DEVICES=6,7)" in f.message and "held by" not in f.message


def test_a_device_outside_the_visible_list_is_said_to_be_unresolved():
    (f,) = classify_vllm(FREE.replace("cuda:0", "cuda:3"), _ctx(visible=[0], cvd="0"))
    assert "cuda:3 (not resolvable)" in f.message and f.evidence["gpu"] is None


def test_missing_flashinfer_names_the_package():
    text = (
        '  File "vllm/v1/sample/ops/topk_topp_sampler.py", line 44\n'
        "ModuleNotFoundError: No module named 'flashinfer'"
    )
    (f,) = classify_vllm(text, _ctx())
    assert f.rule == "PRB014" and "flashinfer-python" in f.message
    assert f.fix == "pip install flashinfer-python"


def test_missing_training_stack_is_left_to_prb009():
    assert classify_vllm("No module named 'transformers.models'", _ctx()) == []


def test_store_timeout_names_port_address_and_interface():
    text = (
        "torch.distributed.DistStoreError: Timed out after 301 seconds waiting for clients. "
        "1/2 clients joined."
    )
    ctx = _ctx(group_port=41234, user_group_port=51216, address="10.0.0.5", interface="ens5")
    (f,) = classify_vllm(text, ctx)
    assert f.rule == "PRB015"
    assert "port 41234 (vllm_group_port; the config's is 51216)" in f.message
    assert "at 10.0.0.5, network interface ens5" in f.message


def test_healthy_server_log_gives_nothing():
    log = (
        "INFO 11-23 10:02:11 [api_server.py:1910] Starting vLLM API server 0 on "
        "http://127.0.0.1:40123\nINFO:     Application startup complete.\n"
        'INFO:     127.0.0.1:50312 - "GET /health HTTP/1.1" 200 OK\n'
    )
    assert classify_vllm(log, _ctx(visible=[0])) == []


def test_duplicate_gpu_names_the_shared_gpu_and_the_way_out():
    text = (
        "node:1422836:1422836 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and "
        "rank 0 both on CUDA device 4b000"
    )
    (f,) = classify_vllm(text, _ctx(group_port=41234, shared_gpus=[0]))
    assert f.rule == "PRB015" and "cannot form" in f.message and "share GPU 0" in f.message
    assert "its own GPU" in f.fix and "colocate" in f.fix


def _colocate(free_mib: int):
    from envdoctor.probe.judge.vllm_judge import judge_vllm
    from envdoctor.probe.run.runner import ProbeResult, ProbeSpec

    spec = ProbeSpec(
        launcher=["python"],
        rank_gpus={0: 0},
        use_vllm=True,
        vllm_mode="colocate",
        vllm={"vllm_gpu_memory_utilization": 0.99},
    )
    result = ProbeResult(
        status="pass",
        ranks={0: {"ok": True, "finished": True, "gpu_free_mib": free_mib, "gpu_total_mib": 81079}},
    )
    judge_vllm(spec, result, None)
    return result


def test_colocate_fraction_that_leaves_the_step_no_room_is_an_error():
    r = _colocate(412)
    (f,) = [x for x in r.findings if x.rule == "PRB017"]
    assert f.severity.name == "ERROR" and r.status == "fail"
    assert "412 MiB free on GPU 0" in f.message and "0.99" in f.message


def test_colocate_with_little_room_warns_and_with_room_stays_quiet():
    (f,) = [x for x in _colocate(3000).findings if x.rule == "PRB017"]
    assert f.severity.name == "WARNING"
    quiet = _colocate(55000)
    assert quiet.status == "pass" and not [x for x in quiet.findings if x.rule == "PRB017"]


def test_terminal_progress_prints_each_finished_phase_with_its_seconds(monkeypatch, capsys):
    from envdoctor.commands import probe as cmd

    clock = iter([0.0, 0.0, 61.25, 70.0])
    monkeypatch.setattr(cmd.time, "monotonic", lambda: next(clock))
    show = cmd._progress(True)
    for phase in ("server starting · trainer: imports", "server ready · trainer: trainer init", "teardown"):
        show(phase)
    err = capsys.readouterr().err
    assert "probe: server starting · trainer: imports (61.2 s)\n" in err
    assert "probe: server ready · trainer: trainer init (8.8 s)\n" in err
    assert err.endswith("probe: teardown…") and cmd._progress(False) is None


def test_worker_times_weight_syncs_and_generations(monkeypatch, capsys):
    import importlib.util
    from pathlib import Path
    from types import SimpleNamespace

    path = Path(__file__).parents[2] / "envdoctor" / "probe" / "run" / "worker.py"
    spec = importlib.util.spec_from_file_location("probe_worker_t", path)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    calls = []
    gen = SimpleNamespace(
        sync_weights=lambda: calls.append("sync"), generate=lambda *a, **k: calls.append("gen") or "out"
    )
    result = {"phases": {}}
    worker._watch_vllm(result, SimpleNamespace(vllm_generation=gen))
    gen.sync_weights()
    assert gen.generate(1) == "out" and calls == ["sync", "gen"]
    assert result["sync_calls"] == 1 and result["vllm_generate_calls"] == 1
    assert set(result["phases"]) == {"sync", "vllm_generate"}
    err = capsys.readouterr().err
    assert "ENVDOCTOR_PHASE rank=0 sync_start" in err and "sync_done" in err


def test_trl_saying_vllm_is_not_available_is_the_same_missing_package():
    text = (
        "ImportError: vLLM is not available and `use_vllm` is set to True. Please install vLLM "
        "with `pip install trl[vllm]` to use it."
    )
    (f,) = classify_vllm(text, VllmContext(part="the in-process vLLM of the trainer (colocate)"))
    assert f.rule == "PRB014" and f.fix == "pip install vllm"


REAL_FAULT = (Path(__file__).parent / "data" / "vllm-capture-fault-h100.log").read_text()


def _colocate_fault(text: str, batch: int = 8):
    from envdoctor.probe.judge.vllm_judge import judge_vllm
    from envdoctor.probe.run.runner import ProbeResult, ProbeSpec

    spec = ProbeSpec(
        launcher=["python"],
        rank_gpus={0: 0},
        use_vllm=True,
        vllm_mode="colocate",
        per_device_train_batch_size=batch,
        vllm={"vllm_gpu_memory_utilization": 0.3},
    )
    generic = Finding(
        "PRB001",
        Severity.ERROR,
        "the GRPO step failed on rank 0: AcceleratorError: "
        "CUDA error: an illegal memory access was encountered",
        "see the log",
        {},
    )
    result = ProbeResult(
        status="fail",
        findings=[generic],
        log_tail=text,
        ranks={
            0: {
                "ok": False,
                "error": {"type": "AcceleratorError", "message": "CUDA error", "traceback": text},
            }
        },
    )
    judge_vllm(spec, result, None)
    return result


def test_vllm_faulting_in_graph_capture_with_the_tiny_model_is_a_warning_not_the_users_error():
    """The real H100 log (vLLM 0.26.0, TRL 1.16, colocate, max_num_seqs 8): the fault is about
    vLLM with the probe's model, so no error blocks a run it says nothing sure about."""
    r = _colocate_fault(REAL_FAULT)
    assert [x.rule for x in r.findings] == ["PRB018"] and r.status == "inconclusive"
    (f,) = r.findings
    assert f.severity == Severity.WARNING and "capture_model" in f.message
    assert "max_num_seqs 8" in f.message and "max_steps: 1" in f.fix


def test_a_fault_outside_vllms_start_stays_the_step_error():
    text = (
        'File "/venv/trl/trainer/grpo_trainer.py", line 1801, in _compute_loss\n'
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    )
    r = _colocate_fault(text)
    assert [x.rule for x in r.findings] == ["PRB001"] and r.status == "fail"


def test_the_same_fault_with_a_model_of_the_users_shape_is_an_error_about_their_run():
    """With the user's shape (same attention, heads, vocabulary, positions; fewer layers) the
    real run's vLLM starts the same kernels on the same shapes: PRB021, an error, not inconclusive."""
    from envdoctor.probe.judge.vllm_judge import judge_vllm
    from envdoctor.probe.plan.model_source import ProbeModel
    from envdoctor.probe.run.runner import ProbeResult, ProbeSpec

    spec = ProbeSpec(
        launcher=["python"],
        rank_gpus={0: 0},
        use_vllm=True,
        vllm_mode="colocate",
        per_device_train_batch_size=8,
        vllm={"vllm_gpu_memory_utilization": 0.3},
        model=ProbeModel(
            source="/m/config.json", config={"hidden_size": 896}, name="Qwen/Qwen2.5-0.5B-Instruct"
        ),
    )
    result = ProbeResult(
        status="fail",
        log_tail=REAL_FAULT,
        model={"ran": "the user's shape"},
        ranks={
            0: {
                "ok": False,
                "error": {"type": "AcceleratorError", "message": "CUDA error", "traceback": REAL_FAULT},
            }
        },
    )
    judge_vllm(spec, result, None)
    (f,) = [x for x in result.findings if x.rule.startswith("PRB02")]
    assert f.rule == "PRB021" and f.severity == Severity.ERROR and result.status == "fail"
    assert "Qwen/Qwen2.5-0.5B-Instruct" in f.message and "max_num_seqs 8" in f.message
    assert not any(x.rule == "PRB018" for x in result.findings)


def _training_node(error: dict, status: str = "fail", phase: str = "trainer init"):
    """A training node of a job probe (its server on another node) after the generic judge."""
    from envdoctor.probe.judge.vllm_judge import judge_vllm
    from envdoctor.probe.run.runner import ProbeResult, ProbeSpec

    spec = ProbeSpec(
        launcher=["python"],
        rank_gpus={0: 0},
        use_vllm=True,
        vllm_mode="server",
        vllm={"vllm_server_host": "10.0.0.2", "vllm_group_port": 51216},
        job_rendezvous="10.0.0.1:29500",
        remote_server=("10.0.0.2", 8000, 51216),
    )
    result = ProbeResult(status=status, ranks={0: {"error": error}}, phase=phase)
    result.findings.append(
        Finding("PRB001", Severity.ERROR, "the GRPO step failed on rank 0: …", "read the log")
    )
    judge_vllm(spec, result, None)
    return result


def test_a_training_node_names_the_weight_sync_group_that_did_not_form_with_the_remote_server():
    store = {
        "type": "DistStoreError",
        "message": "Timed out after 301 seconds waiting for clients. 1/2 clients joined.",
    }
    (f,) = _training_node(store).findings
    assert (
        f.rule == "PRB015" and "the job's vLLM server on 10.0.0.2" in f.message and "port 51216" in f.message
    )
    nccl = {
        "type": "DistBackendError",
        "message": "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
    }
    assert [x.rule for x in _training_node(nccl).findings] == ["PRB015"]


def test_a_training_node_whose_step_failed_elsewhere_keeps_the_step_error():
    other = {"type": "ValueError", "message": "The global train batch size (3) must be divisible by 4"}
    assert [x.rule for x in _training_node(other).findings] == ["PRB001"]
