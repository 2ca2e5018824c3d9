"""`envdoctor diff A.json B.json` as users run it: "works on node A, fails on node B"."""

from __future__ import annotations

import json

import pytest

from tests.cluster.helpers import snippet
from tests.conftest import A100_40, MODERN, run_cli, snapshot


def node(host: str, **kw) -> dict:
    snap = snapshot(2, **kw)
    snap["hostname"] = host
    return snap


def test_identical_snapshots(write_json):
    a = write_json(node("gpu-a"), "a.json")
    proc = run_cli("diff", str(a), str(a))
    assert proc.returncode == 0, proc.stderr
    assert "[✓] Differences (nothing that breaks training)" in proc.stdout
    assert "No issues found" in proc.stdout


def test_the_difference_that_breaks_node_b(write_json):
    a = write_json(node("gpu-a"), "a.json")
    b = write_json(node("gpu-b", packages={**MODERN, "vllm": "0.7.2"}), "b.json")
    proc = run_cli("diff", str(a), str(b))
    assert proc.returncode == 1
    flat = " ".join(proc.stdout.split())
    assert "✗ CLU001 vllm differs across nodes: 0.30.0 on A (gpu-a); 0.7.2 on B (gpu-b)" in flat
    assert "pip install 'vllm==0.30.0' on B (gpu-b)" in flat
    side = [line.split() for line in proc.stdout.splitlines() if line.strip().startswith("vllm")]
    assert side == [["vllm", "0.30.0", "0.7.2", "≠"]]


def test_warnings_pass_unless_strict(write_json):
    a = write_json(node("gpu-a"), "a.json")
    b = write_json(node("gpu-b", model=A100_40, env={"NCCL_IB_DISABLE": "1"}), "b.json")
    proc = run_cli("diff", str(a), str(b))
    assert proc.returncode == 0 and "CLU003" in proc.stdout and "CLU004" in proc.stdout
    assert run_cli("diff", "--strict", str(a), str(b)).returncode == 1


def test_json_output(write_json, tmp_path):
    a = write_json(node("gpu-a"), "a.json")
    b = write_json(node("gpu-b", packages={**MODERN, "torch": "2.13.0+cu126"}), "b.json")
    out = tmp_path / "diff.json"
    proc = run_cli("diff", str(a), str(b), "--format", "json", "-o", str(out))
    assert proc.returncode == 1 and proc.stdout == ""
    data = json.loads(out.read_text())
    assert data["summary"]["errors"] == 1
    (f,) = data["findings"]
    assert f["rule"] == "CLU002" and f["area"] == "cluster"
    assert f["evidence"]["values"] == {"A (gpu-a)": "12.8", "B (gpu-b)": "12.6"}


@pytest.mark.parametrize(
    "content, needle",
    [
        (None, "cannot read"),
        ("{", "invalid JSON"),
        ('{"schema": "other/1"}', "unknown schema"),
    ],
)
def test_unreadable_input_exits_2(tmp_path, write_json, content, needle):
    a = write_json(node("gpu-a"), "a.json")
    b = tmp_path / "b.json"
    if content is not None:
        b.write_text(content)
    proc = run_cli("diff", str(a), str(b))
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_the_documented_diff(tmp_path, write_json):
    write_json(node("gpu-a"), "node-a.json")
    write_json(node("gpu-b", packages={**MODERN, "vllm": "0.7.2"}), "node-b.json")
    args = snippet("diff").split()
    assert args[:2] == ["envdoctor", "diff"]
    proc = run_cli(*args[1:], cwd=tmp_path)
    assert proc.returncode == 1 and "CLU001 vllm" in proc.stdout


def test_distributed_outside_a_job_is_an_input_error():
    proc = run_cli("check", "--distributed", env={"RANK": "", "WORLD_SIZE": ""})
    assert proc.returncode == 2 and "not inside a torch.distributed job" in proc.stderr
    assert "torchrun --nproc_per_node" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("check", "--distributed", "--probe", env={"RANK": "", "WORLD_SIZE": ""})
    assert (
        proc.returncode == 2 and "not inside a torch.distributed job" in proc.stderr
    )  # --probe goes with it
    proc = run_cli("check", "--distributed", "--probe", "--facts", "x.json")
    assert proc.returncode == 2 and "cannot be combined with --facts" in proc.stderr
    proc = run_cli("check", "--distributed", "--probe", "--probe-timeout", "-3")
    assert proc.returncode == 2 and "--probe-timeout" in proc.stderr and "Traceback" not in proc.stderr


def test_a_laptop_against_a_gpu_node_never_strips_the_training_node(write_json):
    """Issue #27 item 8: the laptop lacks the training stack; the fixes install it on the laptop
    (the side that lacks it), never `pip uninstall -y torch` on the GPU node."""
    laptop = snapshot(0, packages={"numpy": "2.0.0"})
    laptop["hostname"] = "laptop"
    a = write_json(laptop, "laptop.json")
    b = write_json(node("gpu-a", model=A100_40, packages={**MODERN, "numpy": "2.0.0"}), "gpu.json")
    for first, second in ((a, b), (b, a)):
        proc = run_cli("diff", str(first), str(second), "--format", "json")
        found = json.loads(proc.stdout)["findings"]
        fixes = " ".join(f["fix"] for f in found)
        assert "uninstall" not in fixes
        for name in ("torch", "trl", "vllm", "transformers", "accelerate"):
            (f,) = [f for f in found if f["evidence"].get("package") == name]
            assert "(laptop)" in f["fix"].split(" on ", 1)[1] and "gpu-a" not in f["fix"]
            assert f"pip install '{name}==" in f["fix"]


def test_a_cpu_torch_is_moved_to_the_cuda_build_not_the_reverse(write_json):
    cpu = write_json(node("gpu-a", packages={**MODERN, "torch": "2.13.0+cpu"}), "a.json")
    cuda = write_json(node("gpu-b"), "b.json")
    proc = run_cli("diff", str(cpu), str(cuda), "--format", "json")
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CLU002"]
    assert "(+cu128) on A (gpu-a)" in f["fix"] and "whl/cu128" in f["fix"]


def test_a_cluster_of_snapshots_against_the_first(write_json):
    """N snapshots: A is the reference; the fix names every node to change."""
    a = write_json(node("gpu-a"), "a.json")
    b = write_json(node("gpu-b"), "b.json")
    c = write_json(node("gpu-c", packages={**MODERN, "vllm": "0.7.2"}), "c.json")
    proc = run_cli("diff", str(a), str(b), str(c))
    assert proc.returncode == 1, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "comparing 3 snapshots (reference: A," in flat
    assert "0.30.0 on A (gpu-a), B (gpu-b); 0.7.2 on C (gpu-c)" in flat
    assert "pip install 'vllm==0.30.0' on C (gpu-c)" in flat
    side = [line.split() for line in proc.stdout.splitlines() if line.strip().startswith("vllm")]
    assert side == [["vllm", "0.30.0", "0.30.0", "0.7.2", "≠"]]


def test_majority_reference_moves_the_odd_node_even_when_it_is_first(write_json):
    odd = write_json(node("gpu-a", packages={**MODERN, "vllm": "0.7.2"}), "a.json")
    rest = [write_json(node(f"gpu-{x}"), f"{x}.json") for x in "bcd"]
    first = " ".join(run_cli("diff", str(odd), *map(str, rest)).stdout.split())
    assert "pip install 'vllm==0.7.2' on B (gpu-b), C (gpu-c), D (gpu-d)" in first
    proc = run_cli("diff", "--majority", str(odd), *map(str, rest))
    flat = " ".join(proc.stdout.split())
    assert proc.returncode == 1 and "(reference: the majority)" in flat
    assert "pip install 'vllm==0.30.0' on A (gpu-a)" in flat


def test_a_big_cluster_tables_only_what_differs(write_json):
    paths = [write_json(node(f"n{i}"), f"n{i}.json") for i in range(5)]
    paths.append(write_json(node("n5", packages={**MODERN, "trl": "0.15.2"}), "n5.json"))
    proc = run_cli("diff", *map(str, paths))
    table = proc.stdout.split("Side by side:")[1].split("envdoctor found")[0]
    rows = [line.split()[0] for line in table.splitlines()[2:] if line.strip() and "✗" not in line]
    assert rows == ["trl"], proc.stdout
    verbose = run_cli("diff", "-v", *map(str, paths)).stdout.split("Side by side:")[1]
    assert "python" in verbose and "driver" in verbose


def test_one_snapshot_is_a_usage_error(write_json):
    a = write_json(node("gpu-a"), "a.json")
    proc = run_cli("diff", str(a))
    assert proc.returncode == 2
    assert "needs 2 to" in proc.stderr and "Traceback" not in proc.stderr
