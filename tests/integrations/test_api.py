"""`envdoctor.preflight`: config objects, dicts and files in; a report out, or PreflightError."""

from __future__ import annotations

import enum
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

import envdoctor
from envdoctor.api import (
    ALWAYS,
    config_mapping,
    preflight_report,
    running_launch,
    this_process_launch,
)
from envdoctor.findings import Finding, Severity
from envdoctor.report import render
from tests.conftest import MODERN, ROOT, snapshot

CLEAN = {"num_generations": 4, "per_device_train_batch_size": 4}


def test_import_envdoctor_stays_light():
    code = (
        "import sys, envdoctor\n"
        "envdoctor.preflight, envdoctor.PreflightError\n"
        "envdoctor.preflight(config={'num_generations': 2}, network=False)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'trl', 'vllm', 'accelerate',"
        " 'datasets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr
    assert "preflight" in dir(envdoctor) and "EnvDoctorCallback" in dir(envdoctor)
    with pytest.raises(AttributeError):
        envdoctor.nope  # noqa: B018


def test_clean_dict_returns_the_report():
    report = envdoctor.preflight(config=CLEAN, facts=snapshot(n_gpus=1), network=False)
    assert report.exit_code() == 0
    assert not [f for f in report.findings if f.severity == Severity.ERROR]


def test_error_raises_with_the_rendered_report():
    with pytest.raises(envdoctor.PreflightError) as info:
        envdoctor.preflight(config={"num_generations": 1}, facts=snapshot(n_gpus=1))
    exc = info.value
    assert isinstance(exc, Exception)
    assert "CFG003" in [f.rule for f in exc.report.findings]
    assert str(exc) == render(exc.report, "text")


def test_strict_raises_on_warnings():
    facts = snapshot(
        n_gpus=1, used={0: 20000}, processes={0: [{"pid": 4242, "name": "python x", "used_mib": 20000}]}
    )
    report = envdoctor.preflight(
        config=CLEAN, launch="torchrun --nproc_per_node 1 train.py", facts=facts, network=False
    )
    assert "MEM002" in [f.rule for f in report.findings]  # a warning: training GPU busy
    with pytest.raises(envdoctor.PreflightError):
        envdoctor.preflight(
            config=CLEAN,
            launch="torchrun --nproc_per_node 1 train.py",
            facts=facts,
            network=False,
            strict=True,
        )


def test_file_path_launch_and_snapshot(tmp_path):
    """The DataParallel trap of seed 000: one process, two GPUs."""
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("num_generations: 2\nper_device_train_batch_size: 2\n")
    with pytest.raises(envdoctor.PreflightError) as info:
        envdoctor.preflight(config=cfg, launch="python train.py", facts=snapshot(n_gpus=2), network=False)
    assert "LAY003" in {f.rule for f in info.value.report.findings}
    facts_file = tmp_path / "facts.json"
    import json

    facts_file.write_text(json.dumps(snapshot(n_gpus=2)))
    report = envdoctor.preflight(
        config=str(cfg),
        launch="torchrun --nproc_per_node 2 train.py",
        facts=str(facts_file),
        network=False,
        select=["LAY"],
    )
    assert report.exit_code() == 0


def test_bad_inputs_are_input_errors(tmp_path):
    from envdoctor.errors import InputError

    with pytest.raises(InputError, match="cannot read"):
        envdoctor.preflight(config=tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="schema"):
        envdoctor.preflight(config=CLEAN, facts={"schema": "nope"})


class Mode(enum.Enum):
    SERVER = "server"


@dataclass
class FakeGRPOConfig:
    """Shaped like TRL's GRPOConfig: a dataclass with defaults, set in the constructor."""

    output_dir: str = "out"
    num_generations: int = 8
    per_device_train_batch_size: int = 8
    vllm_gpu_memory_utilization: float = 0.3  # deprecated in TRL 1.x, left at its default
    vllm_mode: Mode = Mode.SERVER
    use_vllm: bool = False
    beta: float = 0.0
    hub_token: str | None = None
    report_to: list = field(default_factory=list)
    callback: object = None


def test_config_mapping_reads_an_object_without_its_defaults():
    obj = FakeGRPOConfig(
        num_generations=8, beta=0.04, hub_token="hf_secret", callback=object(), report_to=["none"]
    )
    obj._private = 1  # noqa: SLF001
    got = config_mapping(obj)
    assert got["beta"] == 0.04 and got["report_to"] == ["none"]
    assert got["vllm_mode"] == "server" and got["num_generations"] == 8  # always kept
    assert "vllm_gpu_memory_utilization" not in got  # default: not something the user set
    assert "output_dir" not in got and "hub_token" not in got and "callback" not in got
    assert "_private" not in got
    assert {"num_generations", "per_device_train_batch_size"} <= set(ALWAYS)


def test_grpo_config_object_from_trl():
    from trl import GRPOConfig

    args = GRPOConfig(
        output_dir="out", use_cpu=True, report_to=[], num_generations=2, per_device_train_batch_size=4
    )
    report = envdoctor.preflight(config=args, facts=snapshot(n_gpus=1), network=False)
    config_area = next(a for a in report.areas if a.key == "config")
    assert config_area.status == "ok" and "GRPOConfig object" in config_area.summary
    bad = GRPOConfig(
        output_dir="out",
        use_cpu=True,
        report_to=[],
        num_generations=2,
        per_device_train_batch_size=4,
        use_vllm=True,
        vllm_mode="colocate",
        vllm_tensor_parallel_size=3,
    )
    with pytest.raises(envdoctor.PreflightError) as info:  # 2 ranks do not split by TP 3
        envdoctor.preflight(
            config=bad,
            launch="torchrun --nproc_per_node 2 train.py",
            facts=snapshot(n_gpus=2, packages={**MODERN, "trl": "1.16.0"}),
            select=["LAY010"],
            network=False,
        )
    assert "GRPOConfig object" in str(info.value)


def test_training_arguments_are_not_a_grpo_config():
    from transformers import TrainingArguments

    _, report = preflight_report(
        config=TrainingArguments(output_dir="out", use_cpu=True), facts=snapshot(n_gpus=1), network=False
    )
    area = next(a for a in report.areas if a.key == "config")
    assert "not a GRPO config" in area.note and not area.findings


def test_running_launch_from_the_launchers_variables(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/work/grpo train.py", "--config", "x.yaml"])
    env = {"LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1"}
    assert running_launch(env) == ("torchrun --nproc_per_node 4 --nnodes 2 --node_rank 1 'grpo train.py'")
    # torchrun --nproc_per_node 1: distributed all the same (no nn.DataParallel)
    assert running_launch({"WORLD_SIZE": "1", "LOCAL_RANK": "0"}).startswith(
        "torchrun --nproc_per_node 1 --nnodes 1 --node_rank 0 "
    )
    assert running_launch({"WORLD_SIZE": "2"}) is None  # not a process of a launcher
    assert this_process_launch({}) == "python 'grpo train.py'"
    monkeypatch.setattr(sys, "argv", [""])  # python -c, a notebook
    assert this_process_launch({}) == "python train.py"


def test_in_process_default_is_this_process_as_it_runs():
    """Without launch=, a plain python process seeing two GPUs is the DataParallel trap (for
    any Trainer: TrainingArguments too)."""
    from transformers import TrainingArguments

    args = TrainingArguments(output_dir="out")
    with pytest.raises(envdoctor.PreflightError) as info:
        envdoctor.preflight(config=args, facts=snapshot(n_gpus=2), network=False)
    assert "LAY003" in {f.rule for f in info.value.report.findings}
    # use_cpu: the Trainer wraps nothing in DataParallel, whatever the GPUs (CUDA is not used)
    cpu = envdoctor.preflight(
        config=TrainingArguments(output_dir="out", use_cpu=True), facts=snapshot(n_gpus=2), network=False
    )
    assert "LAY003" not in {f.rule for f in cpu.findings}
    report = envdoctor.preflight(
        config=args, facts=snapshot(n_gpus=2), network=False, launch="torchrun --nproc_per_node 2 train.py"
    )
    assert report.exit_code() == 0


def test_probe_unavailable_is_an_info_finding(monkeypatch):
    monkeypatch.setitem(sys.modules, "envdoctor.probe.area", None)
    report = envdoctor.preflight(config=CLEAN, probe=True, network=False)
    probe = report.areas[-1]
    assert probe.key == "probe"
    (finding,) = probe.findings
    assert finding.severity == Severity.INFO and "probe not run" in finding.message


def test_probe_findings_join_the_report(monkeypatch):
    from envdoctor.probe.run import runner

    def fake_run_probe(spec, on_phase=None):
        return runner.ProbeResult(
            status="fail",
            findings=[Finding("PRB001", Severity.ERROR, "the probe's GRPO step failed", "see the log")],
        )

    monkeypatch.setattr(runner, "run_probe", fake_run_probe)
    with pytest.raises(envdoctor.PreflightError) as info:
        envdoctor.preflight(config=CLEAN, probe=True, network=False)
    assert "PRB001" in [f.rule for f in info.value.report.areas[-1].findings]
    from envdoctor.errors import InputError

    with pytest.raises(InputError, match="snapshot"):
        envdoctor.preflight(config=CLEAN, facts=snapshot(n_gpus=1), probe=True)


def test_job_pids_are_this_process_and_its_sibling_ranks(tmp_path):
    from envdoctor.api import job_pids

    assert job_pids({}) == {os.getpid()}
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:  # a child of ours stands in for a rank; the test asks as that child's sibling would
        script = (
            "import os, sys; from envdoctor.api import job_pids; print(sorted(job_pids({'LOCAL_RANK': '0'})))"
        )
        child = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        pids = eval(child.stdout)  # noqa: S307 - a list of ints we printed
        assert sibling.pid in pids and os.getpid() not in pids
    finally:
        sibling.kill()
        sibling.wait()
