"""The probe server started before its model is written (probe/stage/server_shim.py): the line's own
imports first, then the line run in-process as Python would run it, once the runner's word
comes; the generic model's line when the writer failed; a launcher's ``exec`` of ``python -m``
run in place; and the runner with a real weight writer and the stand-in server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.probe.plan.model_source import choose
from envdoctor.probe.run.runner import run_probe
from envdoctor.probe.stage.server import SHIM
from tests.probe.test_probe_model import QWEN25_05B, _dir
from tests.probe.test_server import _servers, _spec

RECORDER = """
import json, os, sys
out = os.environ["SHIM_RECORD"]
with open(out, "a") as fh:
    fh.write(json.dumps({"who": %r, "argv": sys.argv, "pid": os.getpid(), "path0": sys.path[0],
                         "mark": os.environ.get("FROM_EXEC"), "main": __name__}) + "\\n")
"""


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(0o755)
    return path


def _shim(tmp_path: Path, argv: list[str], fallback: list[str], word: dict | None) -> tuple[int, list[dict]]:
    ready, fb, record = tmp_path / "ready.json", tmp_path / "fallback.json", tmp_path / "record.jsonl"
    fb.write_text(json.dumps(fallback))
    env = {**os.environ, "SHIM_RECORD": str(record), "PYTHONPATH": str(tmp_path / "mods")}
    proc = subprocess.Popen([sys.executable, str(SHIM), str(ready), str(fb), "--", *argv], env=env)
    time.sleep(0.3)
    assert not record.exists(), "the line ran before the model was there"
    if word is not None:
        ready.write_text(json.dumps(word))
    assert proc.wait(timeout=60) == 0
    return proc.pid, [json.loads(line) for line in record.read_text().splitlines()]


def test_a_console_script_runs_in_the_shims_process_once_the_word_comes(tmp_path):
    script = _script(tmp_path, "trl", RECORDER % "script")
    pid, runs = _shim(tmp_path, [str(script), "vllm-serve", "--model", "/m"], [], {"faithful": True})
    assert runs == [
        {
            "who": "script",
            "argv": [str(script), "vllm-serve", "--model", "/m"],
            "pid": pid,
            "path0": str(tmp_path),  # the script's folder, as Python puts it, not the shim's
            "mark": None,
            "main": "__main__",
        }
    ]


def test_a_program_named_without_its_folder_is_found_on_path(tmp_path, monkeypatch):
    """`trl vllm-serve …` as typed: the shim finds `trl` on PATH as the shell does (the GPU run
    that found this ran in another working directory than the script's)."""
    script = _script(tmp_path, "trl", RECORDER % "script")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _, runs = _shim(tmp_path, ["trl", "vllm-serve"], [], {"faithful": True})
    assert runs[0]["argv"] == [str(script), "vllm-serve"] and runs[0]["path0"] == str(tmp_path)


def test_the_generic_models_line_runs_when_the_writer_failed(tmp_path):
    script = _script(tmp_path, "vllm", RECORDER % "script")
    _, runs = _shim(
        tmp_path,
        [str(script), "serve", "/probe/model"],
        [str(script), "serve", "/probe/generic"],
        {"faithful": False},
    )
    assert [r["argv"][1:] for r in runs] == [["serve", "/probe/generic"]]


def test_a_launcher_that_execs_python_dash_m_runs_that_module_in_place(tmp_path):
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "served.py").write_text(RECORDER % "module")
    launcher = _script(
        tmp_path,
        "trl",
        "import os, sys\n"
        "env = {**os.environ, 'FROM_EXEC': '1'}\n"
        "os.execve(sys.executable, [sys.executable, '-m', 'served', 'serve', 'M'], env)\n",
    )
    pid, runs = _shim(tmp_path, [str(launcher), "vllm-serve"], [], {"faithful": True})
    assert len(runs) == 1 and runs[0]["who"] == "module" and runs[0]["pid"] == pid  # not a new process
    assert runs[0]["argv"] == [str(mods / "served.py"), "serve", "M"] and runs[0]["mark"] == "1"
    assert runs[0]["main"] == "__main__"


def test_python_dash_m_lines_run_as_runpy_does(tmp_path):
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "served.py").write_text(RECORDER % "module")
    pid, runs = _shim(tmp_path, [sys.executable, "-m", "served", "--port", "1"], [], {"faithful": True})
    assert runs[0]["argv"] == [str(mods / "served.py"), "--port", "1"] and runs[0]["pid"] == pid


@pytest.mark.probe
def test_the_server_starts_while_the_users_shape_is_written_and_runs_on_it(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    record = tmp_path / "record"
    record.mkdir()
    small = {
        **QWEN25_05B,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 512,
    }
    spec = _spec(record, "healthy", monkeypatch, timeout_s=300, model=choose(str(_dir(tmp_path, small)), {}))
    r = run_probe(spec)
    assert r.status == "pass", r.log_tail
    assert r.server["started_before_weights"] is True
    from envdoctor.probe.area import _server_text

    assert "started while the weights were written" in _server_text(r)
    assert r.events["server_start"] < r.events["model_written"]  # it did not wait for the writer
    (seen,) = _servers(record)
    assert seen["weights"] == ["model.safetensors"]  # the line ran once they were there
    assert (
        seen["argv"][seen["argv"].index("--model") + 1].endswith("/model")
        and r.model["ran"] == "the user's shape"
    )
    assert r.server["argv"][2:] == seen["argv"]


@pytest.mark.probe
def test_when_the_writer_fails_the_early_server_runs_the_generic_model(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    record = tmp_path / "record"
    record.mkdir()
    broken = {**QWEN25_05B, "model_type": "no_such_family_xyz", "architectures": ["NoSuchForCausalLM"]}
    spec = _spec(record, "healthy", monkeypatch, timeout_s=300, model=choose(str(_dir(tmp_path, broken)), {}))
    r = run_probe(spec)
    assert r.status == "pass", r.log_tail
    assert "PRB020" in {f.rule for f in r.findings} and r.model["ran"] == "generic"
    (seen,) = _servers(record)
    model = seen["argv"][seen["argv"].index("--model") + 1]
    assert model.endswith("/generic") and seen["weights"] == ["model.safetensors"]
    assert r.server["argv"][2:] == seen["argv"] and "--max_model_len" in seen["argv"]
    assert r.vllm["max_model_len"] == int(seen["argv"][seen["argv"].index("--max_model_len") + 1])


def test_a_writer_that_never_ends_leaves_nothing_behind_the_waiting_server(probe_tmp, monkeypatch):
    """The shim waits for a word that never comes: the probe's limit ends it, the writer, the
    warm-up and the trainer, and removes its temp dir."""
    from envdoctor.probe.stage.groups import end_group
    from tests.probe.leftovers import kill_all, left_behind

    class NeverDone:
        def __init__(self, model, folder, python, env, timeout_s) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"], env=env, start_new_session=True
            )

        def done(self) -> bool:
            return False

        def stop(self) -> None:
            end_group(self.proc, 5.0)

    monkeypatch.setattr("envdoctor.probe.stage.staging.ModelWriter", NeverDone)
    record = probe_tmp.parent / "record"
    record.mkdir()
    spec = _spec(
        record, "healthy", monkeypatch, timeout_s=4, model=choose(str(_dir(probe_tmp.parent, QWEN25_05B)), {})
    )
    r = run_probe(spec)
    left = left_behind(probe_tmp)
    kill_all(left)
    assert r.status == "timeout" and r.server["started_before_weights"] is True
    assert _servers(record) == []  # the line never ran: its model never came
    assert left == [] and r.temp_dir_removed


def _after(tmp_path: Path, deadline: float, done_after_s: float | None) -> tuple[float, float | None]:
    """The shim with ``--after DONE DEADLINE``, its word already there: (seconds until the
    line ran, seconds until DONE was written)."""
    ready, done, record = tmp_path / "ready.json", tmp_path / "warm.json", tmp_path / "record.jsonl"
    ready.write_text(json.dumps({"faithful": True}))
    script = _script(tmp_path, "vllm", RECORDER % "script")
    env = {**os.environ, "SHIM_RECORD": str(record)}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(SHIM), str(ready), str(ready), "--after", str(done), f"{deadline:.3f}"]
        + ["--", str(script)],
        env=env,
    )
    written = None
    while proc.poll() is None and time.monotonic() - start < 60:
        if done_after_s is not None and written is None and time.monotonic() - start >= done_after_s:
            done.write_text("{}")
            written = time.monotonic() - start
        if record.exists() and written is None and done_after_s is not None:
            break  # it ran before DONE: the assertion below says so
        time.sleep(0.02)
    assert proc.wait(timeout=60) == 0
    ran = record.stat().st_mtime - (time.time() - (time.monotonic() - start))
    return ran, written


def test_the_line_waits_for_the_model_class_inspection_before_it_starts(tmp_path):
    """vLLM reads its model-info cache once, early: the line starts only once the probe's
    inspection has written it (``--after``), not before."""
    ran, written = _after(tmp_path, time.time() + 30, done_after_s=1.5)
    assert written is not None and ran >= written - 0.05


def test_an_inspection_that_never_ends_holds_the_line_only_until_its_deadline(tmp_path):
    ran, _ = _after(tmp_path, time.time() + 1.0, done_after_s=None)
    assert 0.9 <= ran < 20  # it ran at the deadline, without the file


def test_the_probe_server_starts_after_the_model_class_inspection_it_would_repeat(tmp_path, monkeypatch):
    """With the generic model already written, the server line still waits for the probe's
    inspection of the model class (run beside it), so that vLLM finds it in its cache."""
    ended = tmp_path / "warm-ended"
    slow = tmp_path / "slow_warm.py"
    slow.write_text(
        "import json, sys, time\ntime.sleep(2.0)\n"
        f"open({str(ended)!r}, 'w').write(repr(time.time()))\n"
        "open(sys.argv[1], 'w').write(json.dumps({'architectures': {}}))\n"
    )
    monkeypatch.setattr("envdoctor.probe.stage.warm.WARM_SCRIPT", slow)
    record = tmp_path / "record"
    record.mkdir()
    r = run_probe(_spec(record, "healthy", monkeypatch, timeout_s=60))
    assert r.status == "pass", r.log_tail
    (server,) = record.glob("server-*.json")
    assert server.stat().st_mtime >= float(ended.read_text())  # it started after the inspection
    assert r.server["waited_for_inspection"] is True
