"""Rank 0's side without torch: nodes and roles, CLU005–CLU008, the benchmark plan and its
tables, the composed report in every format; plus the job variables and the facts override."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from envdoctor.cluster.bandwidth import make_plan, round_robin
from envdoctor.cluster.interface import Measurement, NodeInfo, RankInfo, RankResult
from envdoctor.cluster.job import job_env
from envdoctor.cluster.override import apply_override
from envdoctor.cluster.report import Gathered, aggregate, bandwidth_findings, cluster_report
from envdoctor.doctor import check
from envdoctor.errors import InputError
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.report import render
from envdoctor.report.json_format import to_dict
from tests.conftest import MODERN, snapshot

MiB = 1024 * 1024


def uuid(i: int) -> str:  # as torch reports it: no GPU- prefix
    return f"{i:08x}-aaaa-bbbb-cccc-{i:012x}"


def node(rank: int, host: str, n_gpus: int = 2, base: int = 0, **kw) -> NodeInfo:
    """Node facts as its local rank 0 sends them; GPU i has the UUID of ``base + i``."""
    snap = snapshot(n_gpus, **kw)
    snap["hostname"] = host
    for g in snap["gpus"]:
        g["uuid"] = "GPU-" + uuid(base + g["index"])
    _, report = check(from_dict(snap, host), build_plan(live=False), network=False)
    return NodeInfo(rank=rank, host=host, facts=snap, check=to_dict(report))


def ranks_on(
    node_rank: int, host: str, first: int, devices: list[int | None], cuda_count: int = 2, base: int = 0
) -> list[RankInfo]:
    return [
        RankInfo(
            rank=first + i,
            local_rank=i,
            node_rank=node_rank,
            host=host,
            pid=100 + first + i,
            device="cpu" if d is None else f"cuda:{d}",
            cuda_count=cuda_count,
            gpu_uuid="" if d is None else uuid(base + d),
            nccl=d is not None,
        )
        for i, d in enumerate(devices)
    ]


def two_nodes(**node1) -> Gathered:
    ranks = ranks_on(0, "a", 0, [0, 1]) + ranks_on(1, "b", 2, [0, 1], base=16)
    infos = [node(0, "a"), None, node(2, "b", base=16, **node1), None]
    return Gathered("torchrun", 4, ranks, infos)


def measured(group: str, ranks: list[int], seconds: float | None, size: int = 64 * MiB, **kw) -> Measurement:
    return Measurement(group, ranks, "nccl", size, seconds=seconds, **kw)


def test_a_clean_two_node_job():
    g = two_nodes()
    g.plan = make_plan(g.ranks, [(0, "node 0 (a)"), (2, "node 1 (b)")], 30, unique_gpus=True)
    assert g.plan.backend == "nccl" and g.plan.rounds == [[(0, 2, "node 0 (a) ↔ node 1 (b)")]]
    g.results = [RankResult(r, [measured("all", [0, 1, 2, 3], 0.001, correct=True)]) for r in range(4)]
    g.results[0].measurements.append(measured("node 0 (a) ↔ node 1 (b)", [0, 2], 0.004))
    report = cluster_report(g)
    assert report.exit_code() == 0
    cluster = report.areas[-1]
    assert cluster.key == "cluster" and cluster.status == "ok"
    assert (
        "2 nodes, 4 ranks via torchrun; nccl all-reduce ok, 100.66 GB/s bus bandwidth at 64 MiB"
        in cluster.summary
    )  # 64 MiB / 1 ms = 67.1 GB/s algbw; × 2·3/4
    text = render(report)
    assert "0     a     0    NVIDIA H100 80GB HBM3  79.6 GiB  rank 0 (local 0)" in text
    assert "node 0 (a) ↔ node 1 (b)  2      64 MiB  4.00 ms" in text
    assert "GPU layout:" not in text  # the cluster table replaces the one-node layout table


def test_each_node_check_is_kept_and_named():
    g = two_nodes(packages={**MODERN, "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0"]}})
    report = cluster_report(g)
    texts = [f.message for f in report.findings]
    assert any(m.startswith("node 1 (b): ") for m in texts)  # node 1's own findings
    clu = [f for f in report.findings if f.rule == "CLU001"]
    assert [f.evidence["package"] for f in clu] == ["vllm"]
    assert any(f.rule == "PKG004" and f.evidence["node"] == 1 for f in report.findings)


def test_a_node_that_could_not_collect():
    g = two_nodes()
    g.infos[0] = NodeInfo(rank=0, host="a", error="collecting the node's facts failed: boom")
    report = cluster_report(g)
    f = [f for f in report.findings if f.rule == "CLU008"]
    assert len(f) == 1 and f[0].message == (
        "node 0 (a) could not be checked: collecting the node's facts failed: boom"
    )
    # node 1's check becomes the base; nothing to compare with one set of facts
    assert report.areas[0].summary.startswith("node 1 (b): ")
    assert report.areas[-1].skipped["CLU001"] == "fewer than two nodes sent their facts"


def test_a_node_whose_own_check_fails_is_still_compared():
    g = two_nodes(packages={**MODERN, "vllm": "0.7.2"})
    g.infos[2].check, g.infos[2].check_error = None, "grpo.yaml: cannot read: No such file"
    report = cluster_report(g)
    found = {(f.rule, f.message.split(":")[0]) for f in report.areas[-1].findings}
    assert found == {
        ("CLU008", "node 1 (b)'s own check could not run"),
        ("CLU001", "vllm differs across nodes"),
    }


def test_device_layout_clu007():
    ranks = ranks_on(0, "a", 0, [0, 0])  # two ranks on GPU 0
    ranks += [
        RankInfo(
            rank=2, local_rank=2, node_rank=0, host="a", pid=9, device="none", cuda_count=2, visible="0,1"
        )
    ]
    g = Gathered("torchrun", 3, ranks, [node(0, "a"), None, None])
    report = cluster_report(g)
    msgs = [f.message for f in report.findings if f.rule == "CLU007"]
    assert any(m.startswith("ranks 0, 1 share GPU 0 on node 0 (a)") for m in msgs)
    assert any(
        "rank 2 (local rank 2 on node 0 (a)) should train on cuda:2 but sees only 2 GPUs "
        "(CUDA_VISIBLE_DEVICES=0,1)" in m
        for m in msgs
    )
    assert "rank 0 (local 0), rank 1 (local 1), ✗ shared" in render(report)
    plan = make_plan(ranks, [(0, "node 0")], 30, unique_gpus=False)
    assert plan.backend == "gloo" and "not every rank has a GPU" in plan.why


def test_foreign_processes_show_in_the_roles():
    info = node(0, "a", processes={1: [{"pid": 4242, "name": "python other.py"}]})
    g = Gathered("torchrun", 1, ranks_on(0, "a", 0, [0]), [info])
    assert "other: pid 4242 python other.py" in render(cluster_report(g))


def test_aggregate_takes_the_slowest_rank_and_any_error():
    rows = aggregate(
        [
            RankResult(0, [measured("all", [0, 1], 0.001, correct=True)]),
            RankResult(1, [measured("all", [0, 1], 0.003, correct=True)]),
        ]
    )
    assert len(rows) == 1 and rows[0].seconds == 0.003 and rows[0].correct
    rows = aggregate(
        [
            RankResult(0, [measured("all", [0, 1], 0.001)]),
            RankResult(1, [measured("all", [0, 1], None, error="DistBackendError: x")]),
        ]
    )
    assert rows[0].error == "DistBackendError: x" and rows[0].seconds is None


def test_failed_wrong_and_slow_collectives():
    rows = [
        measured("all", [0, 1, 2], None, error="DistBackendError: timed out"),
        measured("node 0 ↔ node 1", [0, 1], 0.002, correct=False),
        measured("node 0 ↔ node 2", [0, 2], 0.002),
        measured("node 1 ↔ node 2", [1, 2], 0.010),
    ]
    found = [
        (f.rule, f.severity.value, f.evidence.get("group") or f.evidence.get("pair"))
        for f in bandwidth_findings(rows)
    ]
    assert found == [
        ("CLU005", "error", "all"),
        ("CLU005", "error", "node 0 ↔ node 1"),
        ("CLU006", "warning", "node 1 ↔ node 2"),
    ]


def test_a_failed_control_collective_still_gives_a_report():
    g = two_nodes()
    g.failures.append("gathering the benchmark results: RuntimeError: timed out")
    report = cluster_report(g)
    assert report.exit_code() == 1
    assert any(f.rule == "CLU005" and "timed out" in f.message for f in report.findings)


def test_select_and_ignore_apply_to_cluster_rules():
    g = two_nodes(packages={**MODERN, "vllm": "0.7.2"}, env={"NCCL_IB_DISABLE": "1"})
    rules = {f.rule for f in cluster_report(g, ignore=["CLU001"]).areas[-1].findings}
    assert rules == {"CLU004"}
    rules = {f.rule for f in cluster_report(g, select=["env-differs"]).areas[-1].findings}
    assert rules == {"CLU004"}


def test_every_format_renders_the_cluster():
    g = two_nodes(packages={**MODERN, "vllm": "0.7.2"})
    report = cluster_report(g)
    data = json.loads(render(report, "json"))
    assert data["extra"]["cluster"]["nodes"][1] == {
        "node": 1,
        "host": "b",
        "ranks": [2, 3],
        "runtime": {},
        "override": None,
        "error": None,
        "check_error": None,
    }
    assert {"area": "cluster", "rule": "CLU001"}.items() <= next(
        f for f in data["findings"] if f["rule"] == "CLU001"
    ).items()
    suite = ET.fromstring(render(report, "junit").split("\n", 1)[1])
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert "CLU001" in failed


def test_round_robin_pairs_every_node_once_and_disjoint_per_round():
    for n in range(1, 8):
        rounds = round_robin([(r * 8, f"node {r}") for r in range(n)])
        pairs = [(a, b) for rnd in rounds for a, b, _ in rnd]
        assert sorted(pairs) == [(a * 8, b * 8) for a in range(n) for b in range(a + 1, n)]
        for rnd in rounds:
            members = [r for a, b, _ in rnd for r in (a, b)]
            assert len(members) == len(set(members))


def test_job_variables():
    env = {
        "RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1",
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": "x",
    }
    job = job_env(env)
    assert (job.rank, job.node_rank, job.local_rank, job.leader) == (3, 1, 1, False)
    assert job.launcher == "torchrun" and job.master == "10.0.0.1:29500"
    with pytest.raises(InputError, match="not inside a torch.distributed job"):
        job_env({"RANK": "0"})
    with pytest.raises(InputError, match="outside a world"):
        job_env({**env, "RANK": "4"})


def test_facts_override_merges_and_names_bad_input(tmp_path):
    facts = from_dict(snapshot(2, env={"NCCL_DEBUG": "INFO"}), "x")
    facts.source = "live"
    path = tmp_path / "o.json"
    path.write_text(
        json.dumps(
            {
                "packages": {"vllm": "0.7.2", "trl": None},
                "env": {"NCCL_IB_DISABLE": "1"},
                "runtime": {"nccl": "2.1"},
            }
        )
    )
    new, runtime = apply_override(facts, {"torch": "2.9.0"}, str(path))
    assert new.version("vllm") == "0.7.2" and new.version("trl") is None
    assert new.version("torch") == facts.version("torch") and new.live
    assert new.env == {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "1"}
    assert runtime == {"torch": "2.9.0", "nccl": "2.1"}
    for content, needle in (
        ("{", "not a JSON file"),
        ("[]", "expected a JSON object"),
        ('{"packages": 3}', "key 'packages'"),
        ('{"gpus": [{"name": "x"}]}', "gpus[0].index"),
    ):
        path.write_text(content)
        with pytest.raises(InputError, match=needle.replace("[", r"\[").replace("]", r"\]")):
            apply_override(facts, {}, str(path))


def test_a_collection_is_bounded_by_its_deadline():
    import threading

    from envdoctor.cluster import gather

    release = threading.Event()
    try:
        value, error = gather.with_deadline(lambda: release.wait(30), 0.2, "collecting")
        assert value is None and error.startswith("collecting did not finish within 0.2 s")
        assert error.endswith(" in wait)")  # where it is stuck
        assert len(gather.stuck) == 1
    finally:
        release.set()
        gather.stuck.clear()

    def bad():
        raise InputError("grpo.yaml", "cannot read")

    assert gather.with_deadline(bad, 5, "collecting") == (None, "collecting failed: grpo.yaml: cannot read")
    assert gather.with_deadline(lambda: 7, 5, "collecting") == (7, None)
