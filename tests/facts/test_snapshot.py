"""Snapshot round trip and malformed snapshots (exit 2 with a clear message)."""

from __future__ import annotations

import json

import pytest

from envdoctor.errors import InputError
from envdoctor.facts.collect import collect_facts
from envdoctor.facts.snapshot import dumps, from_dict, load, to_dict
from tests.conftest import run_cli, snapshot


def test_round_trip_of_this_machine(tmp_path):
    facts = collect_facts()
    path = tmp_path / "f.json"
    path.write_text(dumps(facts))
    again = load(path)
    assert to_dict(again) == to_dict(facts)
    assert again.source == str(path) and not again.live


def test_issue_example_loads():
    data = {
        "schema": "envdoctor.facts/1",
        "python": "3.11.9",
        "platform": "x",
        "driver": {"version": "550.54.15", "cuda": "12.4"},
        "packages": {
            "vllm": {"version": "0.7.2", "requires": ["torch==2.5.1"]},
            "Flash_Attn": {"version": "2.7.0"},
        },
        "gpus": [
            {
                "index": 0,
                "uuid": "GPU-x",
                "name": "NVIDIA A100-SXM4-40GB",
                "memory_total_mib": 40960,
                "memory_used_mib": 512,
                "compute_capability": "8.0",
                "mig": False,
                "processes": [{"pid": 4242, "name": "python", "used_mib": 30000}],
            }
        ],
        "env": {"CUDA_VISIBLE_DEVICES": "0,1"},
    }
    facts = from_dict(data)
    assert facts.version("vllm") == "0.7.2" and facts.version("flash-attn") == "2.7.0"
    assert facts.gpus[0].free_mib == 40960 - 512


@pytest.mark.parametrize(
    "data, expect",
    [
        ({"schema": "envdoctor.facts/9"}, "unknown schema"),
        ([], "expected a JSON object"),
        ({"schema": "envdoctor.facts/1", "gpus": {}}, "key 'gpus'"),
        ({"schema": "envdoctor.facts/1", "gpus": [{"name": "x"}]}, "gpus[0].index"),
        ({"schema": "envdoctor.facts/1", "gpus": [{"index": "0"}]}, "gpus[0].index"),
        ({"schema": "envdoctor.facts/1", "packages": {"vllm": {}}}, "packages.vllm.version"),
        (
            {"schema": "envdoctor.facts/1", "packages": {"vllm": {"version": "1", "requires": [1]}}},
            "requires",
        ),
        ({"schema": "envdoctor.facts/1", "gpus": [{"index": True}]}, "gpus[0].index"),
    ],
)
def test_malformed_snapshots_name_the_key(data, expect):
    with pytest.raises(InputError) as exc:
        from_dict(data, "snap.json")
    assert expect in str(exc.value) and "snap.json" in str(exc.value)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00bad", b"", b"[1, 2"])
def test_malformed_snapshot_files_exit_2_without_traceback(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    proc = run_cli("check", "--facts", str(path))
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "Traceback" not in proc.stderr


def test_missing_snapshot_file():
    proc = run_cli("check", "--facts", "/nonexistent/facts.json")
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_deeply_nested_snapshot(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000 + "]" * 100000)
    proc = run_cli("check", "--facts", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_collect_writes_a_loadable_snapshot(tmp_path):
    out = tmp_path / "facts.json"
    proc = run_cli("collect", "-o", str(out), env={"HF_TOKEN": "hf_secret"})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == "envdoctor.facts/1"
    assert data["env"].get("HF_TOKEN") == "****" and "hf_secret" not in out.read_text()
    check = run_cli("check", "--facts", str(out))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "snapshot" in check.stdout


def test_snapshot_skips_live_only_rules(write_json):
    path = write_json(snapshot())
    proc = run_cli("check", "--facts", str(path), "-v", "--config", "/dev/null")
    assert "needs a live machine" in proc.stdout
