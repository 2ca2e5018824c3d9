"""`envdoctor hook`: config files sorted by content, paired, checked offline."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from envdoctor.commands.hook import NO_GPU, NO_TRL, Target, classify, hook_facts, offline_rules, pair
from tests.conftest import run_cli
from tests.integrations.helpers import ACCELERATE, BAD_GRPO, GOOD_GRPO

#: The package rules judge the environment the tests run in (TRL installed, vLLM not): the
#: pre-commit test covers the hook's own environment, where they are skipped.
NO_PKG = ("--ignore", "PKG")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/good.yaml").write_text(GOOD_GRPO)
    (tmp_path / "configs/bad.yaml").write_text(BAD_GRPO)
    (tmp_path / "workflow.yml").write_text("name: ci\non: push\njobs: {}\n")
    (tmp_path / "broken.json").write_text("[1, 2")
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    return tmp_path


def test_bad_config_fails_good_passes_others_skipped(files):
    out = run_cli(
        "hook",
        "configs/good.yaml",
        "configs/bad.yaml",
        "workflow.yml",
        "broken.json",
        "package.json",
        "--assume",
        "trl==1.16.0",
        *NO_PKG,
        cwd=files,
    )
    assert out.returncode == 1, out.stderr
    good, bad = out.stdout.split("── configs/bad.yaml ──")
    assert "── configs/good.yaml ──" in good and "No issues found" in good
    assert "CFG003 num_generations is 1" in bad
    assert "workflow.yml" not in out.stdout and "package.json" not in out.stdout
    assert f"GPUs (none: not collected: the hook checks config files) — skipped: {NO_GPU}" in good
    assert "Probe" not in out.stdout  # the probe needs the machine: not part of the hook


def test_only_good_or_no_config_passes(files):
    assert run_cli("hook", "configs/good.yaml", "--assume", "trl==1.16.0", *NO_PKG, cwd=files).returncode == 0
    none = run_cli("hook", "workflow.yml", "broken.json", cwd=files)
    assert none.returncode == 0 and none.stdout == ""
    skipped = run_cli("hook", "workflow.yml", "broken.json", "-v", cwd=files)
    assert "skipped broken.json: invalid JSON" in skipped.stderr


def test_verbose_lists_every_gpu_rule_as_skipped(files):
    out = run_cli("hook", "configs/good.yaml", "-v", "--assume", "trl==1.16.0", cwd=files)
    text = re.sub(r"\n +(?=[^ \-✓✗!•\[])", " ", out.stdout)  # undo the wrapping
    skipped: dict[str, set[str]] = {}
    for ids, why in re.findall(r"- ([A-Z0-9, ]+) skipped: ([^\n]+)", text):
        skipped.setdefault(why.split(" (")[0].split(":")[0], set()).update(ids.split(", "))
    assert {"GPU001", "LAY003", "MEM001"} <= skipped["needs live GPU facts"]
    assert "LAY008" in skipped.get("needs the live machine", set()), skipped


def test_assume_judges_the_config_for_that_trl(files):
    """vllm_mode exists from TRL 0.18 on: TRL 0.15.2's parser drops it silently (a dead key, a
    warning); for TRL 0.19 and newer an unknown key is refused (an error)."""
    out = run_cli("hook", "configs/good.yaml", "--assume", "trl==0.15.2", "--select", "CFG", cwd=files)
    assert out.returncode == 0 and "`vllm_mode`" in out.stdout and "TRL 0.15.2" in out.stdout
    assert "the key is dead" in " ".join(out.stdout.split())
    strict = run_cli(
        "hook", "configs/good.yaml", "--assume", "trl==0.15.2", "--select", "CFG", "--strict", cwd=files
    )
    assert strict.returncode == 1
    bad = run_cli("hook", "configs/good.yaml", "--assume", "trl=0.15", cwd=files)
    assert bad.returncode == 2 and "expected NAME==VERSION" in bad.stderr


def test_accelerate_config_gives_the_process_count(tmp_path):
    """per_device 4 × 3 processes = 12 divides by 6; with one process 4 does not."""
    (tmp_path / "grpo.yaml").write_text("num_generations: 6\nper_device_train_batch_size: 4\n")
    (tmp_path / "accelerate.yaml").write_text(ACCELERATE)
    paired = run_cli(
        "hook",
        "grpo.yaml",
        "accelerate.yaml",
        "--select",
        "CFG",
        "--strict",
        "--assume",
        "trl==1.16.0",
        cwd=tmp_path,
    )
    assert paired.returncode == 0, paired.stdout
    assert "── grpo.yaml + accelerate.yaml ──" in paired.stdout
    alone = run_cli(
        "hook", "grpo.yaml", "--select", "CFG", "--strict", "-v", "--assume", "trl==1.16.0", cwd=tmp_path
    )
    assert alone.returncode == 0, alone.stdout  # unknown process count: no divisibility finding
    assert "CFG002 skipped: the process count is not known" in " ".join(alone.stdout.split())
    launched = run_cli(
        "hook",
        "grpo.yaml",
        "--select",
        "CFG",
        "--assume",
        "trl==1.16.0",
        "--launch",
        "torchrun --nproc_per_node 2 train.py",
        cwd=tmp_path,
    )
    assert launched.returncode == 1 and "processes (2)" in launched.stdout


def test_accelerate_config_with_colocate_tp_that_does_not_divide(tmp_path):
    (tmp_path / "grpo.yaml").write_text(
        "num_generations: 4\nper_device_train_batch_size: 4\n"
        "use_vllm: true\nvllm_mode: colocate\n"
        "vllm_tensor_parallel_size: 2\n"
    )
    (tmp_path / "acc.yaml").write_text(ACCELERATE)
    out = run_cli("hook", "acc.yaml", "grpo.yaml", "--select", "LAY", "--assume", "trl==1.16.0", cwd=tmp_path)
    assert out.returncode == 1 and "LAY010" in out.stdout


def test_junit_one_suite_per_file_with_skips_and_failures(files):
    out = run_cli(
        "hook",
        "configs/good.yaml",
        "configs/bad.yaml",
        "--format",
        "junit",
        "-o",
        "envdoctor.xml",
        "--assume",
        "trl==1.16.0",
        *NO_PKG,
        cwd=files,
    )
    assert out.returncode == 1
    assert "CFG003" in out.stdout  # the text report still reaches the CI log
    root = ET.parse(files / "envdoctor.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"envdoctor: configs/good.yaml", "envdoctor: configs/bad.yaml"}
    bad = suites["envdoctor: configs/bad.yaml"]
    assert bad.get("failures") == "1"
    failed = [c for c in bad.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["CFG003"]
    gpu = next(c for c in bad.iter("testcase") if c.get("name") == "GPU001")
    assert "needs live GPU facts" in gpu.find("skipped").get("message")
    assert suites["envdoctor: configs/good.yaml"].get("failures") == "0"


def test_junit_file_written_when_no_config(files):
    out = run_cli("hook", "workflow.yml", "--format", "junit", "-o", "e.xml", cwd=files)
    assert out.returncode == 0
    assert ET.parse(files / "e.xml").getroot().tag == "testsuites"


def test_json_lists_files(files):
    out = run_cli("hook", "configs/bad.yaml", "--format", "json", "--assume", "trl==1.16.0", cwd=files)
    data = json.loads(out.stdout)
    assert data["schema"] == "envdoctor.hook/1"
    (entry,) = data["files"]
    assert entry["file"] == "configs/bad.yaml" and entry["paths"] == ["configs/bad.yaml"]
    assert (entry["grpo_config"], entry["accelerate_config"]) == ("configs/bad.yaml", None)
    rules = [f["rule"] for f in entry["report"]["findings"]]
    assert "CFG003" in rules


def test_pairing():
    kinds = {
        "a/grpo.yaml": "grpo",
        "a/acc.yaml": "accelerate",
        "b/grpo.yaml": "grpo",
        "b/acc.yaml": "accelerate",
        "c/acc.yaml": "accelerate",
    }
    assert pair(kinds) == [
        Target("a/grpo.yaml", "a/acc.yaml"),
        Target("b/grpo.yaml", "b/acc.yaml"),
        Target(None, "c/acc.yaml"),
    ]
    assert pair({"x/g.yaml": "grpo", "y/acc.yaml": "accelerate"}) == [Target("x/g.yaml", "y/acc.yaml")]
    assert pair({"acc.json": "accelerate"}) == [Target(None, "acc.json")]


def test_classify_by_content_not_name(tmp_path):
    (tmp_path / "accelerate.yaml").write_text("num_generations: 2\n")  # a GRPO config
    (tmp_path / "x.json").write_text(json.dumps({"distributed_type": "MULTI_GPU"}))
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    kinds, skipped, unreadable = classify(
        [str(tmp_path / n) for n in ("accelerate.yaml", "x.json", "list.yaml")]
    )
    assert kinds == {str(tmp_path / "accelerate.yaml"): "grpo", str(tmp_path / "x.json"): "accelerate"}
    assert "expected a mapping" in skipped[str(tmp_path / "list.yaml")]
    assert unreadable == {}


def test_package_rules_skipped_without_trl_where_the_hook_runs():
    facts = hook_facts([])
    facts.extra["trl_installed"] = False  # as in pre-commit's own environment
    skipped = offline_rules(facts, None, None)
    assert skipped["PKG001"] == NO_TRL and skipped["GPU001"] == NO_GPU
    assert "CFG003" not in skipped
    assert facts.env == {} and facts.gpus == []
    only_cfg = offline_rules(facts, ["CFG"], None)
    assert only_cfg == {}
