"""PKG008 (TRL not installed) is an error where the run uses TRL; where the training script read
imports neither TRL nor Unsloth and builds no GRPOTrainer or GRPOConfig (a project's own pipeline
that drives another trainer: set 15's DUET, not held out), it is said at info."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot

STACK = {"torch": "2.7.0", "transformers": "4.57.0", "vllm": "0.9.2"}
OWN = "from duet.pipeline import run\n\nrun()\n"
TRL = (
    "from trl import GRPOConfig, GRPOTrainer\n\n"
    "trainer = GRPOTrainer(model='m', args=GRPOConfig(output_dir='o'))\n"
)


def _pkg008(tmp_path, body: str | None) -> list:
    launch = None
    if body is not None:
        (tmp_path / "train.py").write_text(body)
        launch = f"python {tmp_path / 'train.py'}"
    found = findings(snapshot(1, packages=STACK), config={"use_vllm": True}, launch=launch)
    return [f for f in found if f.rule == "PKG008"]


def test_a_script_that_uses_no_trl_gets_info(tmp_path):
    (f,) = _pkg008(tmp_path, OWN)
    assert f.severity.value == "info" and "imports neither TRL nor Unsloth" in f.message


@pytest.mark.parametrize("body", [TRL, None])
def test_a_trl_script_or_none_read_is_an_error(tmp_path, body):
    (f,) = _pkg008(tmp_path, body)
    assert f.severity.value == "error" and "GRPOTrainer cannot start" in f.message


def test_a_wrapper_whose_repository_module_uses_trl_is_an_error(tmp_path):
    """``train.py`` only calls into the repository's own package, whose module builds GRPOTrainer:
    the run uses TRL, so TRL missing is the error it was (the reader follows the module)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "grpo.py").write_text("def run():\n    " + TRL.replace("\n", "\n    ") + "\n")
    (f,) = _pkg008(tmp_path, "from src.grpo import run\n\nrun()\n")
    assert f.severity.value == "error" and "GRPOTrainer cannot start" in f.message
