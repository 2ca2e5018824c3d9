"""The package resolver (issue 35 item 4) and the package wrong answers it removes: every fix is
one consistent set of exact versions that holds when followed."""

from __future__ import annotations

import re

import pytest
from packaging.specifiers import SpecifierSet

from envdoctor.checks.context import Context
from envdoctor.checks.resolver import PackagePlan, plan_packages
from envdoctor.doctor import check
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import knowledge
from envdoctor.plan.build import build_plan
from envdoctor.probe.judge.failures import VllmContext, classify_vllm
from tests.conftest import findings, snapshot

VLLM = {"use_vllm": True}
NEWEST = {"trl": "1.16.0", "vllm": "0.33.0", "torch": "2.15.0", "transformers": "5.24.0"}
ERRORS_AND_WARNINGS = ("PKG001", "PKG002", "PKG004", "PKG006", "PKG007", "KNF001")


def _ctx(packages: dict, config: dict | None = None, launch: str | None = None) -> Context:
    facts = from_dict(snapshot(2, packages=packages), "t")
    return Context(facts=facts, plan=build_plan(launch=launch, config_dict=config, live=False))


def _pins(line: str) -> dict[str, str]:
    return dict(re.findall(r"'([\w.-]+)==([^']+)'", line))


def _follow(packages: dict, line: str) -> dict:
    """``packages`` after running the pip line ``line`` (exact pins only)."""
    pins = _pins(line)
    assert pins and line.count("pip install") == 1, line
    return {**packages, **pins}


def _problems(packages: dict, config: dict | None = None, launch: str | None = None) -> list:
    found = findings(snapshot(2, packages=packages), config=config, launch=launch)
    return [f for f in found if f.rule in ERRORS_AND_WARNINGS and f.severity.value != "info"]


def _vllm_range(trl: str) -> SpecifierSet:
    return SpecifierSet(knowledge().trl_line(trl)["vllm"])


def _torch_of(vllm: str) -> str:
    return next(p["torch"] for p in knowledge().vllm["torch_pins"] if p["vllm"] == vllm)


# -- issue 35's wrong answers ---------------------------------------------------------------


def test_pkg004_alternatives_satisfy_every_constraint():
    """A repository declaring vllm 0.26 + torch 2.9 + trl 1.16: the alternative that keeps torch
    2.9.0 was vllm==0.13.0, outside TRL 1.16's range (following it gave PKG004 + PKG006)."""
    stack = {"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.9.0"}
    (hit,) = [f for f in findings(snapshot(2, packages=stack), config=VLLM) if f.rule == "PKG004"]
    primary, _, alternative = hit.fix.partition("# or keep torch 2.9.0:")
    assert alternative, hit.fix
    for line in (primary, alternative):
        after = _follow(stack, line)
        assert not _problems(after, VLLM), (line, _problems(after, VLLM))
        assert after["vllm"] in _vllm_range(after["trl"])
    assert _pins(alternative)["vllm"] != "0.13.0" or _pins(alternative).get("trl") != "1.16.0"
    assert hit.remedy is not None and hit.remedy.packages == _pins(primary)


def test_pkg004_alternative_left_out_when_it_does_not_resolve():
    """Keeping torch 2.15.0: no vLLM release envdoctor knows is built for it."""
    (hit,) = [
        f
        for f in findings(
            snapshot(2, packages={"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.15.0"}), config=VLLM
        )
        if f.rule == "PKG004"
    ]
    assert "or keep" not in hit.fix and _pins(hit.fix)


def test_newest_everything_gets_one_pip_line_that_holds():
    """With every package at its newest, the plan printed two lines, the second undoing the first
    (torch back to vLLM 0.33's pin, then vLLM into TRL 1.16's range with another torch)."""
    facts = from_dict(snapshot(2, packages=NEWEST), "t")
    _ctx_, report = check(facts, build_plan(config_dict=VLLM, live=False), network=False)
    assert len(report.upgrade_plan) == 1, report.upgrade_plan
    (line,) = report.upgrade_plan
    after = _follow(NEWEST, line)
    assert after["trl"] == "1.16.0"  # TRL is kept: the config is written for it
    assert after["vllm"] in _vllm_range("1.16.0") and after["torch"] == _torch_of(after["vllm"])
    assert not _problems(after, VLLM)
    facts_after = from_dict(snapshot(2, packages=after), "t")
    assert check(facts_after, build_plan(config_dict=VLLM, live=False), network=False)[1].upgrade_plan == []


@pytest.mark.parametrize(
    ("stack", "extra_need"),
    [
        # TRL 0.17's server needs worker_extension_cls (vLLM >= 0.8); its extra asks vllm>=0.8.3
        ({"trl": "0.17.0", "vllm": "0.7.3", "torch": "2.5.1", "transformers": "4.48.2"}, ">=0.8.3"),
        # TRL 0.18-0.26 import GuidedDecodingParams, which vLLM 0.12 removed
        ({"trl": "0.25.0", "vllm": "0.12.0", "torch": "2.9.0", "transformers": "4.57.0"}, "<0.12"),
    ],
)
def test_knf001_fix_names_exact_versions_that_hold(stack, extra_need):
    launch = "trl vllm-serve --model m" if stack["trl"] == "0.17.0" else None
    config = {**VLLM, "vllm_mode": "server"} if stack["trl"] != "0.17.0" else VLLM
    (hit,) = [
        f for f in findings(snapshot(2, packages=stack), config=config, launch=launch) if f.rule == "KNF001"
    ]
    assert "trl[vllm]'" not in hit.fix and hit.remedy is not None
    primary = hit.fix.split("  #")[0]
    assert _pins(primary) == hit.remedy.packages
    after = _follow(stack, primary)
    assert after["vllm"] in SpecifierSet(extra_need) or after["trl"] != stack["trl"]
    assert not _problems(after, config, launch), _problems(after, config, launch)


def test_missing_vllm_one_exact_line_in_check_and_probe():
    """check said `pip install 'trl[vllm]'`, the probe an unpinned `pip install vllm`: both now
    say the resolver's line, the vLLM in the installed TRL's range built for the installed torch."""
    stack = {"trl": "1.16.0", "torch": "2.11.0", "transformers": "5.23.0", "accelerate": "1.15.0"}
    (hit,) = [f for f in findings(snapshot(2, packages=stack), config=VLLM) if f.rule == "PKG001"]
    line = hit.fix.split("  #")[0]
    pins = _pins(line)
    assert set(pins) == {"vllm"} and pins["vllm"] in _vllm_range("1.16.0")
    assert _torch_of(pins["vllm"]) == "2.11.0"
    assert hit.remedy is not None and hit.remedy.packages == pins
    assert not _problems(_follow(stack, line), VLLM)
    ctx = _ctx(stack, VLLM)
    probe = classify_vllm(
        "RuntimeError: vLLM is not available", VllmContext(part="the probe", vllm_install=line)
    )
    assert [f.fix for f in probe if f.rule == "PRB014"] == [line]
    from envdoctor.probe.plan.spec import _vllm_part

    ctx.facts.gpus = []
    assert _vllm_part(ctx).get("vllm_install") == line


# -- the resolver itself ----------------------------------------------------------------------


def test_consistent_stack_plans_nothing_and_never_loads_resolvelib():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from envdoctor.checks.context import Context\n"
        "from envdoctor.checks.resolver import plan_packages\n"
        "from envdoctor.facts.snapshot import from_dict\n"
        "from envdoctor.plan.build import build_plan\n"
        "from tests.conftest import snapshot\n"
        "pk = {'trl': '1.16.0', 'vllm': '0.30.0', 'torch': '2.13.0', 'transformers': '5.16.1'}\n"
        "ctx = Context(facts=from_dict(snapshot(2, packages=pk), 't'),"
        " plan=build_plan(config_dict={'use_vllm': True}, live=False))\n"
        "print(plan_packages(ctx).command == '', 'resolvelib' in sys.modules)\n"
    )
    from tests.conftest import ROOT

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr


def test_fewest_moves_keep_trl_and_the_rest():
    plan = plan_packages(_ctx({"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.9.0"}, VLLM))
    assert plan.changes == {"torch": "2.11.0"} and plan.before == {"torch": "2.9.0"}
    assert plan.command == "pip install 'torch==2.11.0'"
    assert plan.remedy().packages == {"torch": "2.11.0"}


def test_a_required_version_is_kept_or_said_unfixable():
    ctx = _ctx({"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.9.0"}, VLLM)
    keep = plan_packages(ctx, {"torch": "==2.9.0"})
    assert "torch" not in keep.changes and keep.changes["vllm"] in _vllm_range(
        keep.changes.get("trl", "1.16.0")
    )
    assert _torch_of(keep.changes["vllm"]) == "2.9.0"
    stuck = plan_packages(_ctx({"trl": "1.16.0", "torch": "2.15.0"}, VLLM), {"torch": "==2.15.0"})
    assert stuck.changes == {} and stuck.command == ""
    assert "torch ==2.15.0 (required)" in stuck.unfixable


def test_known_failure_release_is_avoided():
    """TRL 0.19.0 colocate crashes every run (huggingface/trl#3633): the plan moves to 0.19.1."""
    ctx = _ctx(
        {"trl": "0.19.0", "vllm": "0.9.2", "torch": "2.7.0", "transformers": "4.53.0"},
        {**VLLM, "vllm_mode": "colocate"},
    )
    assert plan_packages(ctx).changes == {"trl": "0.19.1"}


def test_plan_is_cached_per_context_and_request():
    ctx = _ctx(NEWEST, VLLM)
    assert plan_packages(ctx) is plan_packages(ctx)
    assert plan_packages(ctx, {"torch": "==2.13.0"}) is not plan_packages(ctx)
    assert isinstance(plan_packages(ctx), PackagePlan)


def test_a_plan_avoids_the_known_bad_pairs_pkg007_warns_of_where_it_can():
    """TRL 0.15.2 + vLLM 0.8.0 (unsloth's threads of March 2025): vLLM 0.7.3 is built for the
    installed torch but TRL 0.15.2 pins 0.7.2 (PKG007 warns of 0.7.3 where several processes
    gather): the plan moves to 0.7.2, and following it leaves no error and adds no warning (the
    fix closure's proof)."""
    stack = {
        "trl": "0.15.2",
        "vllm": "0.8.0",
        "torch": "2.5.1",
        "transformers": "4.49.0",
        "accelerate": "1.4.0",
    }
    launch = "torchrun --nproc_per_node 2 train.py"
    got = plan_packages(_ctx(stack, {"use_vllm": True}, launch))
    assert not got.unfixable and got.changes == {"vllm": "0.7.2"}
    assert _problems({**stack, **got.changes}, {"use_vllm": True}, launch) == []


def test_no_upgrade_plan_where_no_package_finding_asks_for_one():
    """A published Unsloth run (its vLLM in-process, use_vllm unset: TRL's vLLM range is not
    judged) was told "No issues found" and, below it, to move torch and vLLM. The plan is the
    package findings' fix: none at warning or error, no plan; the resolver still has its line."""
    stack = {"trl": "0.22.2", "vllm": "0.9.2", "torch": "2.7.0", "transformers": "4.56.2"}
    facts = from_dict(snapshot(1, packages=stack), "t")
    ctx, report = check(facts, build_plan(config_dict={}, live=False), network=False)
    assert not [f for f in report.findings if f.severity.value != "info" and f.rule[:3] in ("PKG", "KNF")]
    assert plan_packages(ctx).command  # TRL 0.22's vLLM range, with vLLM installed
    assert report.upgrade_plan == []


def test_a_pre_release_lower_bound_is_no_release_to_advise(tmp_path):
    """The catalogue's ``transformers>=5.0.0rc0`` (an Unsloth entry's range) is a bound, not a
    release to install: the warnings_issued failure's fix moves transformers to a final release."""
    script = tmp_path / "train.py"
    script.write_text(
        "from trl import GRPOConfig, GRPOTrainer\n\n"
        "trainer = GRPOTrainer(model='m', args=GRPOConfig(output_dir='o', num_generations=2,"
        " per_device_train_batch_size=2), reward_funcs=[])\n"
    )
    packages = {
        "trl": "0.23.0",
        "transformers": "5.4.0",
        "torch": "2.8.0",
        "vllm": "0.10.2",
        "unsloth": "2026.8.1",
    }
    (f,) = [
        f for f in findings(snapshot(1, packages=packages), launch=f"python {script}") if f.rule == "KNF001"
    ]
    pins = re.findall(r"(?:transformers|trl)==([\w.]+)", f.fix)
    # the model ('m') is not known: transformers is kept (no downgrade below the installed
    # release: checks/model_floors.transformers_floor) and TRL moves to the release that fixes it
    assert pins and not any(re.search(r"(rc|a|b|dev)\d", v) for v in pins), f.fix
    assert "transformers==" not in f.fix, f.fix
