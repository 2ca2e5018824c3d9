"""EnvDoctorCallback on a real (tiny, CPU) transformers.Trainer."""

from __future__ import annotations

import logging
import os

import pytest

import envdoctor
from envdoctor.integrations.callback import EnvDoctorCallback
from tests.conftest import LEGACY, MODERN, snapshot
from tests.integrations.helpers import MIB, FakeProc


def test_clean_setup_trains_and_prints_one_report(tmp_path, tiny, capsys):
    from transformers import Trainer

    cb = EnvDoctorCallback(network=False)
    trainer = Trainer(
        model=tiny.model(), args=tiny.args(tmp_path), train_dataset=tiny.dataset(), callbacks=[cb]
    )
    trainer.train()
    assert trainer.state.global_step == 3
    out = capsys.readouterr().out
    assert out.count("envdoctor 0.1.0 — checking this machine") == 1
    assert cb.report is not None and cb.report.exit_code() == 0
    assert "GPU001" not in [f.rule for f in cb.report.findings]  # use_cpu: no GPU is no news


def test_grpo_config_as_trainer_args_is_checked(tmp_path, tiny):
    from transformers import Trainer
    from trl import GRPOConfig

    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        max_steps=1,
        report_to=[],
        per_device_train_batch_size=4,
        num_generations=2,
        save_strategy="no",
        disable_tqdm=True,
        bf16=False,
        activation_checkpointing=False,
    )
    cb = EnvDoctorCallback(network=False, print_report=False)
    Trainer(model=tiny.model(), args=args, train_dataset=tiny.dataset(), callbacks=[cb]).train()
    config = next(a for a in cb.report.areas if a.key == "config")
    assert "GRPOConfig object" in config.summary and config.status == "ok"


def test_config_error_raises_at_init(tmp_path, tiny):
    from transformers import Trainer

    with pytest.raises(envdoctor.PreflightError) as info:
        Trainer(
            model=tiny.model(),
            args=tiny.args(tmp_path),
            train_dataset=tiny.dataset(),
            callbacks=[EnvDoctorCallback(config={"num_generations": 1}, network=False)],
        )
    assert "CFG003 num_generations is 1" in str(info.value)


def test_injected_facts_with_an_error_raise_at_init(tmp_path, tiny):
    """Seed 000 as a snapshot: TRL 0.15, two GPUs, `python train.py` (the DataParallel trap)."""
    from transformers import Trainer

    cb = EnvDoctorCallback(
        config={"use_vllm": True},
        facts=snapshot(n_gpus=2, packages=LEGACY),
        launch="python train.py",
        network=False,
    )
    with pytest.raises(envdoctor.PreflightError) as info:
        Trainer(model=tiny.model(), args=tiny.args(tmp_path), train_dataset=tiny.dataset(), callbacks=[cb])
    assert "LAY003" in {f.rule for f in info.value.report.findings}


def test_strict_stops_on_warnings(tmp_path, tiny):
    from transformers import Trainer

    cb = EnvDoctorCallback(
        strict=True,
        facts=snapshot(n_gpus=1, driver_cuda="12.4", packages={**MODERN, "torch": "2.13.0+cu126"}),
    )
    with pytest.raises(envdoctor.PreflightError):
        Trainer(model=tiny.model(), args=tiny.args(tmp_path), train_dataset=tiny.dataset(), callbacks=[cb])


def test_bad_config_path_is_reported_not_a_crash(tmp_path, tiny):
    from transformers import Trainer

    with pytest.raises(envdoctor.PreflightError) as info:
        Trainer(
            model=tiny.model(),
            args=tiny.args(tmp_path),
            train_dataset=tiny.dataset(),
            callbacks=[EnvDoctorCallback(config=tmp_path / "nope.yaml", network=False)],
        )
    # the finding, not the report's text: that wraps at its width, where the temp path's length
    # (longer under pytest-xdist: popen-gwN/) decides whether "cannot read" is split by a break
    (run004,) = [f for f in info.value.report.findings if f.rule == "RUN004"]
    assert "nope.yaml: cannot read" in run004.message
    assert "RUN004" in str(info.value)


def test_watch_during_training_warns_when_this_process_lands_on_a_generation_gpu(
    tmp_path, tiny, fake_nvml, caplog
):
    """Sampled every 2 steps; at step 4 this training process shows up on generation GPU 1."""
    from transformers import Trainer, TrainerCallback

    class Intrude(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                fake_nvml.procs[1] = [FakeProc(os.getpid(), 520 * MIB)]

    cb = EnvDoctorCallback(
        generation_gpus=[1], every_n_steps=2, nvml=fake_nvml, network=False, print_report=False
    )
    trainer = Trainer(
        model=tiny.model(),
        args=tiny.args(tmp_path, max_steps=6),
        train_dataset=tiny.dataset(32),
        callbacks=[Intrude(), cb],
    )
    with caplog.at_level(logging.WARNING, logger="envdoctor"):
        trainer.train()
    warned = [r.getMessage() for r in caplog.records if "RUN005" in r.getMessage()]
    assert len(warned) == 1 and f"pid {os.getpid()} (rank 0" in warned[0]
    assert "at step 4" in warned[0]
    assert fake_nvml.calls == 4  # memory sampled at train begin and steps 2, 4, 6
