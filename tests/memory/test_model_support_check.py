"""PKG010 inside `check`: the model's config.json names a model type (transformers) or an
architecture (vLLM, when the run uses it) that the installed release lacks and a later one has
(rules/knowledge/models.json.gz): an error with the resolver's fix; quiet for a release that has
it, a model with code of its own (auto_map), a name no release read has."""

from __future__ import annotations

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import snapshot
from tests.memory.configs import QWEN25_05B

QWEN3 = dict(QWEN25_05B, architectures=["Qwen3ForCausalLM"], model_type="qwen3")


def _pkg010(packages: dict, config: dict) -> list:
    ctx = Context(
        facts=from_dict(snapshot(n_gpus=1, packages=packages), "test-snapshot"),
        plan=build_plan(config_dict=config, launch="torchrun --nproc_per_node 1 train.py", live=False),
        network=False,
    )
    return [f for f in run_rules(ctx, select=["PKG010"]).findings if f.rule == "PKG010"]


OLD = {"trl": "0.17.0", "transformers": "4.50.0", "torch": "2.5.1", "accelerate": "1.5.2", "vllm": "0.7.3"}


def test_a_transformers_older_than_the_model_type_is_an_error(model_dir):
    found = _pkg010(OLD, {"model_name_or_path": model_dir(QWEN3)})
    assert [f.severity.value for f in found] == ["error"]
    assert "model type qwen3" in found[0].message and "from 4.51.0" in found[0].message
    assert "transformers" in found[0].fix


def test_vllm_is_judged_when_the_run_uses_it(model_dir):
    found = _pkg010(OLD, {"model_name_or_path": model_dir(QWEN3), "use_vllm": True})
    names = {f.evidence["package"] for f in found}
    assert names == {"transformers", "vllm"}
    vllm = next(f for f in found if f.evidence["package"] == "vllm")
    assert "architecture Qwen3ForCausalLM" in vllm.message and "from 0.8.4" in vllm.message


def test_quiet_when_the_installed_release_has_it(model_dir):
    new = dict(OLD, transformers="4.51.3", vllm="0.8.5", torch="2.6.0")
    assert _pkg010(new, {"model_name_or_path": model_dir(QWEN3), "use_vllm": True}) == []


def test_quiet_for_remote_code_and_unknown_names(model_dir):
    remote = dict(QWEN3, auto_map={"AutoConfig": "configuration_x.XConfig"})
    assert _pkg010(OLD, {"model_name_or_path": model_dir(remote, "remote")}) == []
    custom = dict(QWEN25_05B, architectures=["AcmeForCausalLM"], model_type="acme")
    assert _pkg010(OLD, {"model_name_or_path": model_dir(custom, "custom"), "use_vllm": True}) == []


def test_the_resolver_keeps_the_models_floor_in_every_plan(model_dir):
    """The upgrade plan and other rules' package fixes meet the model's floors too: a plan that
    fixes vLLM's transformers pin but leaves vLLM below the model's architecture (or keeps a
    transformers without its model type) would leave PKG010 behind."""
    from envdoctor.checks.resolver import plan_packages
    from envdoctor.doctor import upgrade_plan

    config = {"model_name_or_path": model_dir(QWEN3), "use_vllm": True}
    ctx = Context(
        facts=from_dict(snapshot(n_gpus=1, packages=OLD), "test-snapshot"),
        plan=build_plan(config_dict=config, launch="torchrun --nproc_per_node 1 train.py", live=False),
        network=False,
    )
    outcome = run_rules(ctx)
    plan = plan_packages(ctx)
    assert versions.at_least(plan.changes["vllm"], "0.8.4")
    assert versions.at_least(plan.changes["transformers"], "4.51.0")
    assert upgrade_plan(ctx, outcome.findings) == [plan.command]


def test_a_release_between_two_read_ones_where_the_name_arrives_is_not_judged(model_dir):
    """The table reads 4.56.2 and 4.57.1, not 4.57.0 (which added qwen3_vl: vLLM's registry asks
    for transformers 4.57): a 4.57.0, or a 4.57 dev build, may have it. Not known: no finding."""
    from envdoctor.knowledge.models import _table, has

    releases = _table("transformers")[0]
    assert "4.57.0" not in releases and {"4.56.2", "4.57.1"} <= set(releases)
    assert has("transformers", "qwen3_vl", "4.57.0") is None
    assert has("transformers", "qwen3_vl", "4.56.2") is False
    assert has("transformers", "qwen3_vl", "4.57.1") is True
    vl = dict(QWEN25_05B, architectures=["Qwen3VLForConditionalGeneration"], model_type="qwen3_vl")
    assert _pkg010(dict(OLD, transformers="4.57.0"), {"model_name_or_path": model_dir(vl, "vl")}) == []
    assert _pkg010(dict(OLD, transformers="4.56.2"), {"model_name_or_path": model_dir(vl, "vl")})


def test_checks_upgrade_plan_on_rocm_names_the_platforms_builds(model_dir):
    """check's "Upgrade plan" is a pip line as fix's commands are: on ROCm it names vLLM for the
    platform's builds instead of pinning PyPI's CUDA wheel."""
    from envdoctor.doctor import upgrade_plan

    rocm = dict(OLD, torch="2.6.0+rocm6.2", vllm="0.8.3", transformers="4.50.3", accelerate="1.6.0")
    config = {"model_name_or_path": model_dir(QWEN3), "use_vllm": True}
    ctx = Context(
        facts=from_dict(snapshot(n_gpus=1, packages=rocm), "test-snapshot"),
        plan=build_plan(config_dict=config, launch="torchrun --nproc_per_node 1 train.py", live=False),
        network=False,
    )
    lines = upgrade_plan(ctx, run_rules(ctx).findings)
    assert lines[0].startswith("pip install 'transformers==") and "vllm" not in lines[0]
    assert lines[1].startswith("# vllm==") and "ROCm builds" in lines[1]
