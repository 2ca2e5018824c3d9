"""The curated knowledge under rules/: schema-valid, sourced, and each constraint exercised."""

from __future__ import annotations

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.checks.docs import parse_area_file
from envdoctor.knowledge import knowledge
from envdoctor.knowledge.schema import KnowledgeError, validate
from envdoctor.resources import rules_dir
from tests.conftest import MODERN, findings, snapshot

KNOWLEDGE = sorted((rules_dir() / "knowledge").glob("*.yaml"))


@pytest.mark.parametrize("path", sorted(rules_dir().glob("*.yaml")), ids=lambda p: p.name)
def test_rule_docs_match_schema(path):
    assert parse_area_file(yaml.safe_load(path.read_text()), path.name)


@pytest.mark.parametrize("path", KNOWLEDGE, ids=lambda p: p.name)
def test_knowledge_matches_schema(path):
    validate(path.name, yaml.safe_load(path.read_text()))


def test_schema_rejects_bad_entries():
    base = {"schema": "envdoctor.knowledge/1"}
    with pytest.raises(KnowledgeError, match="references"):
        validate("x", {**base, "features": [{"name": "a", "since": "1.0"}]})
    with pytest.raises(KnowledgeError, match="specifier"):
        validate(
            "x",
            {
                **base,
                "known_bad": [
                    {
                        "id": "a",
                        "symptom": "s",
                        "fix": "f",
                        "when": {"vllm": "outside the range"},
                        "references": ["r"],
                    }
                ],
            },
        )
    with pytest.raises(KnowledgeError, match="schema"):
        validate("x", {"features": []})


def _outside(spec: str) -> str | None:
    """The newest 0.x.y release just below the range's lower bound, if it has one."""
    s = SpecifierSet(spec)
    lo = [x for x in s if x.operator in (">=", "==")]
    below = [
        f"0.{m}.{p}"
        for m in range(5, 40)
        for p in range(0, 4)
        if lo and not s.contains(f"0.{m}.{p}") and Version(f"0.{m}.{p}") < Version(lo[0].version)
    ]
    return max(below, key=Version) if below else None


def _inside(spec: str) -> str | None:
    s = SpecifierSet(spec)
    for m in range(5, 40):
        for p in range(0, 4):
            if s.contains(f"0.{m}.{p}"):
                return f"0.{m}.{p}"
    return None


LINES = [line for line in knowledge().trl.get("trl_lines", []) if line.get("vllm")]


@pytest.mark.parametrize("line", LINES, ids=lambda line: line["trl"])
def test_each_trl_line_vllm_range(line):
    """PKG006 fires just below the line's vLLM range and stays quiet inside it."""
    trl = next(
        f"{m}.{n}.{p}"
        for m in (0, 1)
        for n in range(0, 40)
        for p in range(0, 4)
        if SpecifierSet(line["trl"]).contains(f"{m}.{n}.{p}")
    )
    inside, outside = _inside(line["vllm"]), _outside(line["vllm"])
    cfg = {"use_vllm": True}
    if inside:
        pk = {**MODERN, "trl": trl, "vllm": inside}
        assert "PKG006" not in {f.rule for f in findings(snapshot(2, packages=pk), config=cfg)}
    if outside:
        pk = {**MODERN, "trl": trl, "vllm": outside}
        found = findings(snapshot(2, packages=pk), config=cfg)
        if Version(outside) < Version("0.7.1"):  # too old for GRPO at all: PKG002 says it alone
            assert {"PKG002"} <= {f.rule for f in found} and "PKG006" not in {f.rule for f in found}
            return
        fired = [f for f in found if f.rule == "PKG006"]
        assert fired and fired[0].remedy is not None, fired
        moved = fired[0].remedy.packages  # exact versions, the vLLM inside the range (or TRL moved)
        assert all("==" + v in fired[0].fix for v in moved.values())
        assert SpecifierSet(line["vllm"]).contains(moved.get("vllm", outside)) or "trl" in moved


def test_torch_pin_suggests_a_vllm_built_for_the_installed_torch():
    pins = knowledge().vllm.get("torch_pins", [])
    if not pins:
        pytest.skip("no torch pins")
    pin = pins[-1]
    other = next(p for p in pins if p["torch"] != pin["torch"])
    pk = {
        **MODERN,
        "torch": pin["torch"] + "+cu128",
        "vllm": {"version": other["vllm"], "requires": [f"torch=={other['torch']}"]},
    }
    fired = [f for f in findings(snapshot(2, packages=pk)) if f.rule == "PKG004"]
    assert fired and fired[0].remedy is not None
    moved = fired[0].remedy.packages  # issue 35: one consistent set of exact versions
    torch = moved.get("torch", pin["torch"])
    vllm = moved.get("vllm", other["vllm"])
    assert {p["torch"] for p in pins if p["vllm"] == vllm} == {torch}
    assert SpecifierSet(knowledge().trl_line(MODERN["trl"])["vllm"]).contains(vllm)


def _plan(facts, config=None, require=None):
    from envdoctor.checks.context import Context
    from envdoctor.checks.resolver import plan_packages
    from envdoctor.plan.interface import Plan

    return plan_packages(Context(facts=facts, plan=Plan(config=config or {})), require)


def _line(facts, config=None):
    return _plan(facts, config).command


def test_upgrade_plan_prefers_moving_vllm_when_torchvision_pins_torch():
    from envdoctor.facts.snapshot import from_dict

    pins = {p["vllm"]: p["torch"] for p in knowledge().vllm["torch_pins"]}
    vllm_for_26 = next(v for v, t in pins.items() if t == "2.6.0")
    vllm_for_27 = max(
        (v for v, t in pins.items() if t == "2.7.0"), key=lambda v: tuple(map(int, v.split(".")))
    )
    facts = from_dict(
        snapshot(
            1,
            packages={
                "torch": "2.7.0+cu126",
                "torchvision": {"version": "0.22.0", "requires": ["torch==2.7.0"]},
                "vllm": {"version": vllm_for_26, "requires": ["torch==2.6.0"]},
            },
        ),
        "t",
    )
    assert _line(facts) == f"pip install 'vllm=={vllm_for_27}'"
    facts.packages.pop("torchvision")
    assert _line(facts) in ("pip install 'torch==2.6.0'", f"pip install 'vllm=={vllm_for_27}'")


def test_upgrade_plan_empty_for_a_consistent_stack():
    from envdoctor.facts.snapshot import from_dict

    facts = from_dict(
        snapshot(1, packages={"torch": "2.6.0", "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0"]}}),
        "t",
    )
    assert _line(facts) == ""


def test_upgrade_plan_uses_curated_pins_for_a_snapshot_without_requires_dist():
    """Issue 13 item 5: vLLM 0.26.0 is built for torch 2.11.0 only. One package moves: torch
    back to 2.11.0, or vLLM to a release built for torch 2.13.0 that keeps transformers 5.23.0
    (0.31 and 0.32 cap transformers below it)."""
    from envdoctor.facts.snapshot import from_dict

    facts = from_dict(
        snapshot(1, packages={"vllm": "0.26.0", "torch": "2.13.0", "transformers": "5.23.0"}), "t"
    )
    assert _line(facts) in ("pip install 'torch==2.11.0'", "pip install 'vllm==0.30.0'")
    facts.packages["torch"].version = "2.11.0"
    assert _line(facts) == ""


# -- the knowledge horizon (issue 35 item 6) ----------------------------------------------------


def test_horizon_covers_every_table_and_rejects_bad_entries():
    from envdoctor.knowledge import horizon

    h = horizon()
    assert {"trl", "vllm", "transformers", "torch", "accelerate", "deepspeed", "peft"} <= set(h)
    newest = {n: Version(e["newest"]) for n, e in h.items()}
    pins = knowledge().vllm["torch_pins"]
    assert newest["vllm"] >= max(Version(p["vllm"]) for p in pins)
    assert newest["torch"] >= max(Version(p["torch"]) for p in pins)
    assert newest["trl"] >= max(Version(t) for t in knowledge().grpo_keys["tags_scanned"])
    base = {"schema": "envdoctor.knowledge/1", "checked": "2026-11-28"}
    good = {"newest": "1.16.0", "released": "2026-10-15", "references": ["https://pypi.org/project/trl/"]}
    validate("horizon.yaml", {**base, "packages": {"trl": good}})
    with pytest.raises(KnowledgeError, match="date"):
        validate("horizon.yaml", {**base, "packages": {"trl": {**good, "released": "last week"}}})
    with pytest.raises(KnowledgeError, match="not a version"):
        validate("horizon.yaml", {**base, "packages": {"trl": {**good, "newest": "next"}}})
    with pytest.raises(KnowledgeError, match="checked"):
        validate("horizon.yaml", {"schema": "envdoctor.knowledge/1", "packages": {"trl": good}})


def test_horizon_is_compiled_with_the_rest():
    import json

    from envdoctor.resources import COMPILED

    lines = (rules_dir() / COMPILED).read_text().splitlines()
    (line,) = [ln for ln in lines if ln.startswith("knowledge/horizon.yaml\t")]
    assert json.loads(line.split("\t", 2)[2])["packages"]["trl"]["newest"]


@pytest.mark.parametrize(
    ("version", "past"),
    [("1.16.0", False), ("1.15.0", False), ("1.16.0+local", False), ("1.17.0", True), ("1.17.0.dev0", True)],
)
def test_beyond_horizon(version, past):
    from envdoctor.knowledge import beyond_horizon, release_said

    newest = knowledge().horizon["packages"]["trl"]["newest"]
    assert newest == "1.16.0"  # the parametrisation above is written for it
    found = beyond_horizon("trl", version)
    assert (found is not None) is past
    said = release_said("trl", version)
    if past:
        assert said == f"TRL ≤ 1.16.0 (newest known; {Version(version).public} is newer than envdoctor knows)"
    else:
        assert said == f"TRL {version}"
    assert beyond_horizon("not-a-package", "99.0") is None and beyond_horizon("trl", None) is None


def test_no_message_states_a_fact_about_an_unknown_trl():
    """LAY003 said "TRL 1.17.0 refuses …" under --assume trl==1.17.0: it now names the newest
    release the fact comes from, and PKG009 says where the knowledge ends."""
    snap = snapshot(2, packages={**MODERN, "trl": "1.17.0"})
    found = findings(snap, config={"use_vllm": False}, launch="python train.py")
    lay = [f for f in found if f.rule == "LAY003"]
    assert lay and "TRL 1.17.0" not in lay[0].message
    assert "TRL ≤ 1.16.0 (newest known; 1.17.0 is newer than envdoctor knows)" in lay[0].message
    (past,) = [f for f in found if f.rule == "PKG009"]
    assert "1.17.0" in past.message and "1.16.0, released 2026-10-15" in past.message
    assert past.severity.value == "warning"


def test_assumed_trl_is_not_called_installed():
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    facts = from_dict(snapshot(2, packages={**MODERN, "trl": "1.16.0"}), "t")
    facts.extra["assumed"] = ["trl"]
    ctx = Context(facts=facts, plan=build_plan(config_dict={"vllm_device": "cuda:1"}, live=False))
    (hit,) = [f for f in run_rules(ctx).findings if f.rule == "CFG001"]
    assert "installed TRL" not in hit.message and "TRL 1.16.0" in hit.message


def test_no_rules_yaml_file_repeats_a_key_in_one_mapping() -> None:
    """A key written twice in one mapping (two ``why:`` of one rule) silently keeps only the last:
    every YAML file of rules/ has each key once per mapping."""

    class Strict(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
        keys = [loader.construct_object(k) for k, _ in node.value]
        repeated = {k for k in keys if keys.count(k) > 1}
        assert not repeated, f"{node.start_mark}: repeated keys {sorted(map(str, repeated))}"
        return loader.construct_mapping(node)

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    files = sorted(rules_dir().rglob("*.yaml"))
    assert files
    for path in files:
        yaml.load(path.read_text(encoding="utf-8"), Loader=Strict)  # noqa: S506 - a SafeLoader subclass
