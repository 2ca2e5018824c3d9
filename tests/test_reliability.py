"""Fault injection on the static path: broken metadata, huge or hostile input, no driver."""

from __future__ import annotations

import json
import sys

import pytest

from envdoctor.facts import packages as pk
from tests.conftest import run_cli, snapshot


def test_corrupt_metadata_of_an_installed_distribution(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "vllm-0.8.5.dist-info").mkdir(parents=True)
    (site / "vllm-0.8.5.dist-info" / "METADATA").write_bytes(b"\xff\xfe garbage\n\n")
    (site / "trl-1.0.0.dist-info").mkdir()  # METADATA missing altogether
    monkeypatch.setattr(sys, "path", [str(site)])
    found = pk.collect_packages(("vllm", "trl"))
    assert found["vllm"].version.startswith("<unreadable")
    assert found["trl"].version.startswith("<unreadable")


def test_unreadable_versions_become_a_warning_not_a_crash(write_json):
    snap = snapshot(2, packages={"trl": "<unreadable: no Version field>", "torch": "2.6.0"})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert any(f["rule"] == "PKG005" for f in json.loads(proc.stdout)["findings"])


def test_huge_snapshot_lists(write_json):
    snap = snapshot(1)
    snap["gpus"][0]["processes"] = [{"pid": i, "name": "p", "used_mib": 1} for i in range(100_000)]
    snap["packages"].update({f"pkg{i}": {"version": "1.0"} for i in range(100_000)})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--", "torchrun",
                   "--nproc_per_node", "1", "t.py")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


def test_huge_config_list(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("reward_weights: [" + ", ".join("1.0" for _ in range(100_000)) + "]\n")
    proc = run_cli("check", "--config", str(cfg))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["", "-1", "0,0", "GPU-nope", "MIG-x", "a,b", "99", " , "])
def test_impossible_visible_devices_are_findings(write_json, value):
    snap = snapshot(2, env={"CUDA_VISIBLE_DEVICES": value})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--format", "json", "--",
                   "torchrun", "--nproc_per_node", "1", "t.py")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    if value.strip() not in ("",):
        assert "GPU002" in rules


@pytest.mark.parametrize("value", ["expandable_segments", "::", "x:y,z", "max_split_size_mb:abc",
                                   "backend:cudaMallocAsync,expandable_segments:True", "\x00"])
def test_broken_alloc_conf_is_a_finding_naming_the_variable(write_json, value):
    snap = snapshot(1, env={"PYTORCH_CUDA_ALLOC_CONF": value})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--format", "json")
    found = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "ALC001"]
    assert found and "PYTORCH_CUDA_ALLOC_CONF" in found[0]["message"]


def test_unknown_launch_flags_are_tolerated(write_json):
    proc = run_cli("check", "--facts", str(write_json(snapshot(2))), "--", "accelerate",
                   "launch", "--frobnicate", "7", "--num_processes", "2", "t.py")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


def test_secrets_never_reach_a_snapshot_or_report(tmp_path):
    out = tmp_path / "f.json"
    env = {"HF_TOKEN": "hf_SECRET1", "NCCL_SOCKET_IFNAME": "eth0", "VLLM_API_KEY": "SECRET2"}
    run_cli("collect", "-o", str(out), env=env)
    text = out.read_text()
    assert "SECRET" not in text and "eth0" in text
    report = run_cli("check", "--format", "json", "-v", env=env)
    assert "SECRET" not in report.stdout


def test_missing_driver_is_a_clear_fact():
    proc = run_cli("check", "--format", "json")
    data = json.loads(proc.stdout)
    gpu_area = next(a for a in data["areas"] if a["key"] == "gpus")
    assert "none:" in gpu_area["summary"]


@pytest.mark.parametrize("text", [
    "a: " + "{b: " * 50_000 + "1" + "}" * 50_000,  # libyaml's composer would overflow the C stack
    "a: " + "[" * 50_000 + "]" * 50_000,
    "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(150)) + "  " * 151 + "1\n",
])
def test_deeply_nested_config_exits_2_naming_the_file(tmp_path, text):
    cfg = tmp_path / "deep.yaml"
    cfg.write_text(text)
    proc = run_cli("check", "--config", str(cfg), "--no-network")
    assert proc.returncode == 2, proc.stderr
    assert "deep.yaml" in proc.stderr and "nested more than 100 levels" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("content", "message"), [
    (b"num_generations: 8\nlearning_rate: \xff\xfe\n", "not UTF-8 text (byte 34)"),
    (b'{"num_generations": 8, "use_v', "invalid JSON at line 1"),
])
def test_not_utf8_and_truncated_configs_exit_2(tmp_path, content, message):
    cfg = tmp_path / ("g.json" if content.startswith(b"{") else "g.yaml")
    cfg.write_bytes(content)
    proc = run_cli("check", "--config", str(cfg), "--no-network")
    assert proc.returncode == 2 and cfg.name in proc.stderr and message in proc.stderr, proc.stderr


def test_wrong_typed_config_values_are_findings(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text('num_generations: "eight"\nper_device_train_batch_size: [1]\nuse_vllm: maybe\n'
                   "learning_rate: 1e-5\nbf16: yes\n")
    proc = run_cli("check", "--config", str(cfg), "--no-network", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    flagged = {f["evidence"]["key"] for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CFG005"}
    assert flagged == {"num_generations", "per_device_train_batch_size", "use_vllm"}


def test_deeply_nested_pyproject_and_override_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nselect = " + "[" * 100_000
                                             + "]" * 100_000 + "\n")
    proc = run_cli("check", "--no-network", cwd=tmp_path)
    assert proc.returncode == 2 and "pyproject.toml" in proc.stderr and "nested too deeply" in proc.stderr

    from envdoctor.cluster.override import read_override
    from envdoctor.errors import InputError
    deep = tmp_path / "o.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_override(str(deep))


def _tree(*roots):
    return {(str(p), p.stat().st_size, p.stat().st_mtime_ns)
            for root in roots for p in sorted(root.rglob("*"))}


def test_check_writes_nothing(tmp_path):
    """`envdoctor check` (and `rules`, `explain`) leave the working folder, HOME and TMPDIR
    exactly as they were: no cache, no log, no lock file."""
    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for d in (work, home, tmp):
        d.mkdir()
    (work / "grpo.yaml").write_text("num_generations: 4\nper_device_train_batch_size: 4\n")
    (work / "pyproject.toml").write_text("[tool.envdoctor]\nignore = ['GPU001']\n")
    before = _tree(work, home, tmp)
    env = {"HOME": str(home), "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(home / ".cache")}
    for args in (("check", "--config", "grpo.yaml", "-v", "--", "torchrun", "--nproc_per_node",
                  "2", "train.py"), ("check", "--format", "junit"), ("rules",),
                 ("explain", "LAY003")):
        proc = run_cli(*args, cwd=work, env=env)
        assert proc.returncode in (0, 1), proc.stderr
    assert _tree(work, home, tmp) == before
