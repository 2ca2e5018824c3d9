"""vLLM's model-info inspection done ahead of time (probe/stage/vllm_warm.py, probe/stage/warm.py), against a
stand-in ``vllm`` package that keeps vLLM's cache protocol (a hash of the model's file, a JSON
file per class under ``$VLLM_CACHE_ROOT/modelinfos``), and the interpreter of console scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from envdoctor.probe.run.runner import run_probe
from envdoctor.probe.stage.warm import WARM_SCRIPT, interpreter_of

REGISTRY = """
import json, os
from pathlib import Path


class _ModelInfo:
    @staticmethod
    def from_model_cls(cls):
        if cls.__name__ == "Broken":
            raise ValueError("the model class does not inspect")
        return {"class": cls.__name__}


def _record(what):
    folder = os.environ.get("FAKE_VLLM_RECORD")
    if folder:
        Path(folder, "warm-" + what + ".json").write_text(json.dumps({
            "cache_root": os.environ.get("VLLM_CACHE_ROOT"),
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "offline": os.environ.get("HF_HUB_OFFLINE"),
        }))


class _Lazy:
    module_name = "vllm.model_executor.models.toy"

    def __init__(self, class_name):
        self.class_name = class_name

    @staticmethod
    def _get_modelinfo_module_hash(path):
        return "hash-of-" + Path(path).read_text()[:20]

    def _file(self):
        return Path(os.environ["VLLM_CACHE_ROOT"]) / "modelinfos" / (self.class_name + ".json")

    def _load_modelinfo_from_cache(self, digest):
        try:
            data = json.loads(self._file().read_text())
        except OSError:
            return None
        return data["info"] if data["hash"] == digest else None

    def _save_modelinfo_to_cache(self, info, digest):
        self._file().parent.mkdir(parents=True, exist_ok=True)
        self._file().write_text(json.dumps({"hash": digest, "info": info}))
        _record("saved")

    def load_model_cls(self):
        from vllm.model_executor.models import toy
        return getattr(toy, self.class_name)


class _Old:  # a vLLM without the cache: only its own inspection
    def inspect_model_cls(self):
        _record("inspected")


class ModelRegistry:
    models = {"Qwen2ForCausalLM": _Lazy("Qwen2ForCausalLM"), "Broken": _Lazy("Broken"), "OldArch": _Old()}
"""


def _stand_in(root: Path) -> Path:
    models = root / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for pkg in (root / "vllm", root / "vllm" / "model_executor", models):
        (pkg / "__init__.py").write_text("")
    (root / "vllm" / "plugins.py").write_text("def load_general_plugins():\n    pass\n")
    (models / "registry.py").write_text(REGISTRY)
    (models / "toy.py").write_text("class Qwen2ForCausalLM:\n    pass\n\nclass Broken:\n    pass\n")
    return root


def _warm(tmp_path: Path, *arches: str, stand_in: bool = True) -> dict:
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(_stand_in(tmp_path / "site")) if stand_in else str(tmp_path / "empty")
    out = tmp_path / "warm.json"
    done = subprocess.run(
        [sys.executable, str(WARM_SCRIPT), str(out), *arches], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_the_inspection_is_left_in_vllms_cache_and_found_there_the_next_time(tmp_path):
    report = _warm(tmp_path, "Qwen2ForCausalLM", "OldArch", "NotInVllm", "Broken")
    assert report["architectures"]["Qwen2ForCausalLM"] == "cached"
    assert report["architectures"]["OldArch"] == "inspected"  # vLLM's own way, without a cache
    assert report["architectures"]["NotInVllm"] == "unknown"
    assert report["architectures"]["Broken"].startswith("ValueError: the model class does not inspect")
    cached = json.loads((tmp_path / "cache" / "modelinfos" / "Qwen2ForCausalLM.json").read_text())
    assert cached == {"hash": "hash-of-class Qwen2ForCausal", "info": {"class": "Qwen2ForCausalLM"}}
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path / "site")}
    out = tmp_path / "again.json"
    subprocess.run([sys.executable, str(WARM_SCRIPT), str(out), "Qwen2ForCausalLM"], env=env, check=True)
    assert json.loads(out.read_text())["architectures"] == {"Qwen2ForCausalLM": "hit"}


def test_without_vllm_it_says_so_and_exits_cleanly(tmp_path):
    report = _warm(tmp_path, "Qwen2ForCausalLM", stand_in=False)
    assert report["architectures"] == {} and "ModuleNotFoundError" in report["error"]


def test_the_probe_warms_with_the_servers_interpreter_environment_and_its_own_cache(tmp_path, monkeypatch):
    from tests.probe.test_server import _spec

    record = tmp_path / "record"
    record.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(_stand_in(tmp_path / "site")), *sys.path]))
    result = run_probe(_spec(record, "healthy", monkeypatch))
    assert result.status == "pass", result.log_tail
    assert result.vllm["prepared"]["model_info"] == {"Qwen2ForCausalLM": "cached"}  # the generic model's
    seen = json.loads((record / "warm-saved.json").read_text())
    assert seen["visible"] == "3" and seen["offline"] == "1"  # the server's GPUs, offline
    assert seen["cache_root"] and "envdoctor-probe-" in seen["cache_root"]  # the probe's own cache
    assert not Path(seen["cache_root"]).exists()  # gone with the probe's temp dir
    assert "vllm_warm_start" in result.events


def test_the_interpreter_of_console_scripts(tmp_path):
    py = tmp_path / "bin" / "python3.12"
    py.parent.mkdir()
    py.write_text("")
    direct = tmp_path / "bin" / "trl"
    direct.write_text(f"#!{py}\nimport sys\n")
    assert interpreter_of(str(direct)) == str(py)
    long_path = tmp_path / "bin" / "vllm"  # pip's shell launcher for a long interpreter path
    long_path.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            '''exec' "{py}" "$0" "$@"
            ' '''
            import sys
            """
        )
    )
    assert interpreter_of(str(long_path)) == str(py)
    env_form = tmp_path / "bin" / "tool"
    env_form.write_text("#!/usr/bin/env python3\n")
    found = interpreter_of(str(env_form))
    assert found is not None and Path(found).name.startswith("python")
    binary = tmp_path / "bin" / "native"
    binary.write_bytes(b"\x7fELF\x02\x01")
    assert interpreter_of(str(binary)) is None and interpreter_of(str(tmp_path / "nothing")) is None
    assert interpreter_of(sys.executable) == sys.executable


def test_the_training_interpreter_is_the_launchers_own(tmp_path):
    """The weights and the warm-up run under the Python that `accelerate` / `torchrun` run, not
    envdoctor's (installed apart, e.g. with pipx, it has no torch)."""
    from envdoctor.probe.stage.staging import python_of

    py = tmp_path / "venv" / "bin" / "python3"
    py.parent.mkdir(parents=True)
    py.write_text("")
    accelerate = py.parent / "accelerate"
    accelerate.write_text(f"#!{py}\nimport sys\n")
    assert python_of([str(accelerate), "launch", "train.py"]) == str(py)
    assert python_of([sys.executable, "train.py"]) == sys.executable
    assert python_of([str(tmp_path / "no-such-launcher"), "x"]) == sys.executable
