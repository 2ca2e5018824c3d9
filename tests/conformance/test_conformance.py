"""Conformance: real published GRPO setups through the real CLI (docs/conformance.md).

Each setup, as published and on the machine it was written for, must come out clean: exit 0 and
not one warning. Each mutation must fail with its rule, and the mutation with its fix applied must
be clean again. A case that fails today because of an open item of issue 13 is listed in KNOWN,
the one place to edit once the fix is merged (strict: a case that starts passing fails the run).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conformance.setups import (
    Case,
    blob_sha,
    build_facts,
    cases,
    cli_args,
    join_continuations,
    read_yaml,
    setup_dirs,
)
from tests.conftest import run_cli

#: Why a case fails on main today (e7964e7). Items of issue 13 that other branches fix, and what this
#: suite found beyond them (NEW_*: not an issue-13 item; each needs an owner). The expectations are
#: the truth; these marks only keep CI green until the fixes are merged.
I1 = ("issue 13 item 1: MEM001 ignores the server line's own --gpu_memory_utilization / "
      "--gpu-memory-utilization (assumes 0.9) and counts a running trl vllm-serve as a stranger")
I2 = "issue 13 item 2: CFG001 calls vllm_gpu_memory_utilization deprecated on TRL >= 0.18"
I3 = ("issue 13 item 3: CFG004 on TrainingArguments keys GRPOConfig inherits "
      "(gradient_checkpointing_kwargs, per_device_eval_batch_size)")
I4 = ("issue 13 item 4: PKG004 severities (vLLM's numba pin and TRL's vllm extra range are "
      "errors; the missing flashinfer-python, without which vLLM 0.26 dies at start, is not one)")
I5 = ("issue 13 item 5: vLLM's curated torch pins are not used to detect a wrong torch in a "
      "snapshot without Requires-Dist")
I11 = ("issue 13 item 11: srun / bash -c multi-node lines read as one process of an unknown "
       "launcher (false LAY003, CFG002) and the srun'd trl vllm-serve line as trainer arguments")
NEW_PKG003 = ("NEW, not an issue-13 item: PKG003 errors on vLLM 0.7.2 with a multi-GPU vllm_device, "
              "though TRL 0.15.2 pins vllm==0.7.2 and open-r1 / TRL's docs ran exactly that")
NEW_MEMCOLO = ("NEW, not an issue-13 item: a colocate GPU with less free memory than "
               "gpu_memory_utilization x total gets only MEM002/MEM003 warnings (exit 0), though "
               "vLLM refuses to start there: MEM001 must cover colocate GPUs")
NEW_PKG006 = ("NEW, not an issue-13 item: PKG006 repeats PKG002's cause (vLLM 0.7.0 under "
              "TRL 0.14) as a second finding")


def _why(*reasons: str) -> str:
    return " + ".join(reasons)


#: case id -> why it fails today. Remove an entry (or a reason) when its fix is merged.
KNOWN: dict[str, str] = {
    "live-h100-colocate:published": _why(I2),
    "live-h100-colocate:stranger-holds-the-gpu": _why(I2, NEW_MEMCOLO),
    "live-h100-colocate:stranger-holds-the-gpu+fix": _why(I2),
    "live-h100-colocate:torch-2.13-snapshot-without-requires": _why(I2, I5),
    "live-h100-colocate:torch-2.13-snapshot-without-requires+fix": _why(I2),
    "live-h100-colocate:torch-2.13-under-vllm-0.26+fix": _why(I2),
    "live-h200x2-server-split:flashinfer-missing": _why(I1, I4),
    "live-h200x2-server-split:flashinfer-missing+fix": _why(I1),
    "live-h200x2-server-split:numba-and-setuptools-as-measured": _why(I1, I4),
    "live-h200x2-server-split:numba-and-setuptools-as-measured+fix": _why(I1),
    "live-h200x2-server-split:published": _why(I1),
    "openr1-colocate-ddp:one-gpu-too-many+fix": _why(I3),
    "openr1-colocate-ddp:published": _why(I3),
    "openr1-colocate-ddp:tensor-parallel-does-not-divide+fix": _why(I3),
    "openr1-colocate-fsdp:published": _why(I3),
    "openr1-colocate-fsdp:stranger-on-a-colocate-gpu": _why(I3, NEW_MEMCOLO),
    "openr1-colocate-fsdp:stranger-on-a-colocate-gpu+fix": _why(I3),
    "openr1-colocate-fsdp:vllm-built-for-another-torch+fix": _why(I3),
    "openr1-colocate-zero2:one-gpu-too-many+fix": _why(I3),
    "openr1-colocate-zero2:published": _why(I3),
    "openr1-colocate-zero2:vllm-built-for-another-torch+fix": _why(I3),
    "openr1-colocate-zero3:batch-not-divisible+fix": _why(I3),
    "openr1-colocate-zero3:one-gpu-too-many+fix": _why(I3),
    "openr1-colocate-zero3:published": _why(I3),
    "openr1-colocate-zero3:vllm-built-for-another-torch+fix": _why(I3),
    "openr1-legacy-vllm-device-zero2:dataparallel-launch+fix": _why(I3, NEW_PKG003),
    "openr1-legacy-vllm-device-zero2:one-gpu-too-many+fix": _why(I3, NEW_PKG003),
    "openr1-legacy-vllm-device-zero2:published": _why(I3, NEW_PKG003),
    "openr1-legacy-vllm-device-zero2:vllm-too-old+fix": _why(I3, NEW_PKG003),
    "openr1-server-zero2-code:one-gpu-too-many+fix": _why(I3),
    "openr1-server-zero2-code:published": _why(I3),
    "openr1-server-zero2-code:server-fraction-over-free+fix": _why(I1, I3),
    "openr1-server-zero2-code:trainer-on-the-server-gpu+fix": _why(I3),
    "openr1-server-zero2-code:vllm-built-for-another-torch+fix": _why(I3),
    "openr1-slurm-server-split:batch-not-divisible": _why(I3, I11),
    "openr1-slurm-server-split:batch-not-divisible+fix": _why(I3, I11),
    "openr1-slurm-server-split:one-gpu-too-many": _why(I3, I11),
    "openr1-slurm-server-split:one-gpu-too-many+fix": _why(I3, I11),
    "openr1-slurm-server-split:published": _why(I3, I11),
    "openr1-slurm-server-split:vllm-built-for-another-torch+fix": _why(I3, I11),
    "philschmid-mini-r1:published": _why(I3, NEW_PKG006),
    "philschmid-mini-r1:published-stack-fixed-then-dataparallel+fix": _why(I3, NEW_PKG003),
    "philschmid-mini-r1:published-stack-fixed-then-four-ranks+fix": _why(I3, NEW_PKG003),
    "trl-0.15-vllm-device-auto:dataparallel-launch+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-auto:one-gpu-too-many+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-auto:published": _why(NEW_PKG003),
    "trl-0.15-vllm-device-auto:vllm-0.7.3-with-trl-0.15": _why(I4),
    "trl-0.15-vllm-device-auto:vllm-0.7.3-with-trl-0.15+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-cuda4:dataparallel-launch+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-cuda4:batch-not-divisible+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-cuda4:published": _why(NEW_PKG003),
    "trl-0.15-vllm-device-cuda4:vllm-device-not-visible+fix": _why(NEW_PKG003),
    "trl-0.15-vllm-device-cuda4:vllm-gpu-hidden+fix": _why(NEW_PKG003),
    "trl-0.19-multinode-slurm:batch-not-divisible+fix": _why(I11),
    "trl-0.19-multinode-slurm:one-gpu-too-many": _why(I11),
    "trl-0.19-multinode-slurm:one-gpu-too-many+fix": _why(I11),
    "trl-0.19-multinode-slurm:published": _why(I11),
    "trl-0.19-multinode-slurm:vllm-built-for-another-torch+fix": _why(I11),
    "trl-0.19-server:server-fraction-over-free+fix": _why(I1),
    "trl-1.9-colocate:vllm-outside-trl-range": _why(I4),
    "trl-1.9-grpo-vlm-example:misspelt-config-key+fix": _why(I2),
    "trl-1.9-multinode-slurm:batch-not-divisible+fix": _why(I11),
    "trl-1.9-multinode-slurm:one-gpu-too-many": _why(I11),
    "trl-1.9-multinode-slurm:one-gpu-too-many+fix": _why(I11),
    "trl-1.9-multinode-slurm:published": _why(I11),
    "trl-1.9-multinode-slurm:vllm-built-for-another-torch+fix": _why(I11),
    "trl-1.9-server:server-fraction-over-free+fix": _why(I1),
}

CASES = cases()


def _marks(case: Case) -> list:
    reason = KNOWN.get(case.id)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


def _run(case: Case, tmp_path: Path) -> tuple[int, list[dict], str]:
    work = tmp_path / case.setup
    shutil.copytree(Path(__file__).parent / "setups" / case.setup, work)
    for rel, values in case.files.items():
        data = yaml.safe_load((work / rel).read_text(encoding="utf-8")) or {}
        data.update(values)
        (work / rel).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    facts = tmp_path / "case-facts.json"
    facts.write_text(json.dumps(case.facts), encoding="utf-8")
    proc = run_cli(*cli_args(case, facts), cwd=work)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"exit {proc.returncode}, no JSON report:\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, report["findings"], proc.stdout


def _loud(findings: list[dict]) -> list[str]:
    return [f"{f['rule']} {f['severity']}: {f['message']}" for f in findings
            if f["severity"] in ("error", "warning")]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_case(case: Case, tmp_path):
    code, findings, _ = _run(case, tmp_path)
    loud = _loud(findings)
    if case.expect == "clean":
        assert (code, loud) == (0, []), f"{case.id} must be clean"
        return
    if case.expect.get("no_error"):  # measured harmless: a warning may say so, an error may not
        errors = [line for line in loud if " error: " in line]
        assert (code, errors) == (0, []), f"{case.id} must have no error"
        return
    rule, severity = case.expect["rule"], case.expect.get("severity", "error")
    hits = [f for f in findings if f["rule"] == rule and f["severity"] == severity]
    assert hits, f"{case.id}: expected {rule} ({severity}); got {loud}"
    assert code == (1 if severity == "error" else 0)
    words = case.expect.get("message_has", [])
    assert any(all(w in f["message"] for w in words) for f in hits), (words, hits)
    if case.expect.get("only"):
        assert {f.split()[0] for f in loud} == {rule}, loud


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_setup_is_sourced(setup: Path):
    """Every setup names its source at a commit; published files are byte-identical to it."""
    src = read_yaml(setup / "source.yaml")
    if src.get("kind") == "measured":  # a live run: its record is in docs/conformance.md
        assert src["measured"].startswith("docs/conformance.md#") and src["measured_on"]
        assert src["machine"]["written_for"]
        return
    assert src["commit"] and len(src["commit"]) == 40, "a full commit id"
    assert all(re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", u)
               for u in src["urls"]), "every URL at a commit"
    assert any(src["commit"] in u for u in src["urls"])
    for rel, sha in (src.get("files") or {}).items():
        assert blob_sha((setup / rel).read_bytes()) == sha, f"{rel} differs from the source"
    assert src["machine"]["written_for"]


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_launch_is_as_published(setup: Path):
    """The line envdoctor runs is the published one (continuations joined) unless explained."""
    case = read_yaml(setup / "case.yaml")
    published = join_continuations(case["published"]["trainer"])
    if case["check"].get("derived"):
        assert case["check"]["derived"].strip()
        return
    assert case["check"]["launch"] == published
    if case["published"].get("server"):
        assert case["check"]["server"] == join_continuations(case["published"]["server"])


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_snapshot_is_built_from_its_era(setup: Path):
    """facts.json is what build_facts writes (regenerate: python -m tests.conformance.build)."""
    facts = json.loads((setup / "facts.json").read_text(encoding="utf-8"))
    assert facts == build_facts(setup)


def test_suite_size():
    """At least 15 published setups, each with 2-4 mutations."""
    dirs = setup_dirs()
    assert len(dirs) >= 15
    for d in dirs:
        n = len(read_yaml(d / "case.yaml").get("mutations") or [])
        assert 2 <= n <= 4, (d.name, n)


def test_known_names_real_cases():
    """Every KNOWN entry names a case of the suite (a stale or mistyped entry would hide nothing)."""
    assert set(KNOWN) <= {c.id for c in CASES}
