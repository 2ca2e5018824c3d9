"""CUDA-only rules (the allocator's, the DataParallel trap, bf16 support) do not apply to a run
that uses no CUDA: ``use_cpu`` / ``no_cuda`` on, or a live machine without a GPU. They stay on
for a run that uses the GPUs."""

from __future__ import annotations

import json

from envdoctor.integrations.callback import EnvDoctorCallback
from tests.conftest import LEGACY, run_cli, snapshot

TYPO = "expandable_segmets:True"  # one letter short: torch raises at the first CUDA allocation


def test_callback_on_a_cpu_run_with_a_misspelled_alloc_conf_trains(tmp_path, tiny, monkeypatch):
    from transformers import Trainer

    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", TYPO)
    cb = EnvDoctorCallback(network=False, print_report=False)
    trainer = Trainer(
        model=tiny.model(), args=tiny.args(tmp_path), train_dataset=tiny.dataset(), callbacks=[cb]
    )
    trainer.train()
    assert trainer.state.global_step == 3
    assert "ALC001" not in {f.rule for f in cb.report.findings}
    allocator = next(a for a in cb.report.areas if a.key == "allocator")
    assert "CUDA is not used" in allocator.skipped["ALC001"]


def test_callback_with_injected_gpu_facts_and_use_cpu_skips_the_dataparallel_trap(tmp_path, tiny):
    """Two GPUs and `python train.py` (LAY003 on a GPU run), but the Trainer runs on the CPU."""
    from transformers import Trainer

    cb = EnvDoctorCallback(
        facts=snapshot(n_gpus=2, packages=LEGACY, env={"PYTORCH_CUDA_ALLOC_CONF": TYPO}),
        launch="python train.py",
        network=False,
        print_report=False,
    )
    Trainer(
        model=tiny.model(), args=tiny.args(tmp_path), train_dataset=tiny.dataset(), callbacks=[cb]
    ).train()
    rules = {f.rule for f in cb.report.findings}
    assert not rules & {"ALC001", "LAY003"}, rules


def _check(write_json, tmp_path, config: str) -> dict:
    facts = write_json(snapshot(n_gpus=2, packages=LEGACY, env={"PYTORCH_CUDA_ALLOC_CONF": TYPO}))
    (tmp_path / "grpo.yaml").write_text(config)
    proc = run_cli(
        "check", "--facts", str(facts), "--config", "grpo.yaml", "--format", "json", "--",
        "python", "train.py", cwd=tmp_path,
    )  # fmt: skip
    return json.loads(proc.stdout)


def test_check_skips_cuda_rules_for_use_cpu_and_keeps_them_for_a_gpu_run(write_json, tmp_path):
    cpu = _check(write_json, tmp_path, "use_cpu: true\nper_device_train_batch_size: 4\nnum_generations: 4\n")
    assert not {"ALC001", "LAY003"} & {f["rule"] for f in cpu["findings"]}
    skipped = {k: v for a in cpu["areas"] for k, v in a["skipped"].items()}
    assert skipped["ALC001"] == "CUDA is not used: use_cpu is on (the run trains on the CPU)"
    gpu = _check(write_json, tmp_path, "per_device_train_batch_size: 4\nnum_generations: 4\n")
    assert {"ALC001", "LAY003"} <= {f["rule"] for f in gpu["findings"]}
    no_cuda = _check(
        write_json, tmp_path, "no_cuda: true\nper_device_train_batch_size: 4\nnum_generations: 4\n"
    )
    assert "ALC001" not in {f["rule"] for f in no_cuda["findings"]}
