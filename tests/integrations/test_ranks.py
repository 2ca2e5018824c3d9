"""Per-rank device findings and rank 0's combined report (no processes: plain data)."""

from __future__ import annotations

from envdoctor.findings import Finding, Severity
from envdoctor.integrations.ranks import (
    RankCheck,
    combine,
    device_findings,
    failed_report,
    job_findings,
)
from envdoctor.report.interface import Area, Report


def rc(rank, gpu, planned=None, host="node-a", gen=(), mode=None, findings=(), uuid=""):
    return RankCheck(
        rank=rank,
        world_size=2,
        local_rank=rank,
        host=host,
        node_id=f"boot-{host}",
        pid=1000 + rank,
        device=f"cuda:{rank}",
        gpu=gpu,
        gpu_uuid=uuid,
        planned_gpu=planned,
        generation=list(gen),
        generation_mode=mode,
        findings=list(findings),
    )


def test_rank_on_the_generation_gpu_is_an_error():
    (f,) = device_findings(rc(1, gpu=2, planned=1, gen=[2], mode="server"))
    assert f.rule == "RUN003" and f.severity == Severity.ERROR and "GPU 2" in f.message
    assert device_findings(rc(1, gpu=1, planned=1, gen=[1], mode="colocate")) == []


def test_rank_off_its_planned_gpu_is_a_warning():
    (f,) = device_findings(rc(1, gpu=0, planned=1))
    assert f.rule == "RUN001" and "launch layout puts it on GPU 1" in f.message
    assert device_findings(rc(1, gpu=1, planned=1)) == []
    assert device_findings(rc(1, gpu=None, planned=1)) == []  # CPU


def test_two_ranks_of_one_host_on_one_gpu():
    (f,) = job_findings([rc(0, 0), rc(1, 0), rc(2, 0, host="node-b")])
    assert f.rule == "RUN002" and "ranks 0, 1 share GPU 0 on node-a" in f.message
    assert job_findings([rc(0, 0), rc(1, 0, host="node-b")]) == []
    # same host name in two containers on different machines: the GPU UUIDs tell them apart
    assert job_findings([rc(0, 0, uuid="GPU-a"), rc(1, 0, uuid="GPU-b")]) == []
    (same,) = job_findings([rc(0, 0, uuid="GPU-a"), rc(1, 1, host="node-b", uuid="GPU-a")])
    assert "ranks 0, 1 share GPU 0" in same.message


def _report(*findings):
    return Report(
        areas=[
            Area("config", "GRPO config", findings=list(findings)),
            Area("layout", "GPU layout"),
            Area("probe", "Probe"),
        ],
        subject="job",
    )


def test_combine_adds_what_other_ranks_found_once_named_by_rank():
    same = Finding("GPU001", Severity.WARNING, "no GPU seen")
    own = Finding("CFG003", Severity.ERROR, "num_generations is 1")
    report = combine(_report(same), [rc(0, None, findings=[same]), rc(1, None, findings=[same, own])])
    msgs = [f.message for f in report.findings]
    assert msgs == ["no GPU seen", "rank 1 on node-a: num_generations is 1"]
    assert report.exit_code() == 1 and "2 ranks on 1 host" in report.subject
    assert [r["rank"] for r in report.extra["ranks"]] == [0, 1]


def test_combine_puts_cross_rank_findings_in_the_layout_area():
    report = combine(_report(), [rc(0, 3), rc(1, 3)])
    layout = next(a for a in report.areas if a.key == "layout")
    assert [f.rule for f in layout.findings] == ["RUN002"]


def test_failed_report():
    report = failed_report(rc(1, None), "GRPO config x.yaml: cannot read")
    (f,) = report.findings
    assert f.rule == "RUN004" and "could not check rank 1 on node-a" in f.message
    assert report.exit_code() == 1
    soft = failed_report(rc(1, None), "KeyError: 'x'", Severity.WARNING)
    assert soft.exit_code() == 0
