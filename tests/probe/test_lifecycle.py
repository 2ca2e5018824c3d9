"""The probe's lifecycle: everything it starts is ended and its temp dir removed in one place,
also when a step of the teardown itself fails or Ctrl-C comes before the launcher started."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envdoctor.plan.interface import Launch
from envdoctor.probe.plan.model_source import ProbeModel
from envdoctor.probe.run.runner import ProbeSpec, run_probe
from envdoctor.probe.stage.groups import end_group
from tests.probe.leftovers import kill_all, left_behind


def test_a_failing_teardown_step_does_not_skip_the_rest(probe_tmp, monkeypatch):
    """Ending the launcher's group raises: the error still surfaces, and the rest of the
    teardown (watches, temp dir) has run."""
    from envdoctor.probe.run import runner

    def end_then_fail(proc, grace_s):
        end_group(proc, grace_s)
        raise RuntimeError("a teardown step failed")

    monkeypatch.setattr(runner, "end_group", end_then_fail)
    with pytest.raises(RuntimeError, match="a teardown step failed"):
        run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=2))
    left = left_behind(probe_tmp)
    kill_all(left)
    assert left == [] and list(probe_tmp.iterdir()) == []


def test_ctrl_c_while_waiting_for_the_model_writer_ends_the_writer(probe_tmp, monkeypatch):
    """In server mode with a server line that is not Python, the probe waits for the model of
    the user's shape before anything is launched; Ctrl-C there ends the writer too."""
    started: list[subprocess.Popen] = []

    class StillWriting:
        def __init__(self, model, folder, python, env, timeout_s) -> None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"], env=env, start_new_session=True
            )
            started.append(self.proc)

        def wait(self) -> dict:
            raise KeyboardInterrupt  # the user pressed Ctrl-C here

        def stop(self) -> None:
            end_group(self.proc, 5.0)

    monkeypatch.setattr("envdoctor.probe.stage.staging.ModelWriter", StillWriting)
    model = ProbeModel(source="config.json", config={"model_type": "llama"}, name="user/model")
    native = Launch(raw="vllm serve m", launcher="vllm-serve", program=["/bin/true"])  # not Python:
    spec = ProbeSpec(  # no shim can start it early, so the probe waits for the weights first
        launcher=[sys.executable], model=model, use_vllm=True, vllm_mode="server", server_launch=native
    )
    r = run_probe(spec)
    left = left_behind(probe_tmp)
    kill_all(left)
    assert r.status == "interrupted" and "PRB006" in {f.rule for f in r.findings}
    assert started and started[0].poll() is not None, "the writer was left running"
    assert left == [] and r.temp_dir_removed
