"""Config rules beyond their fire / quiet scenarios."""

from __future__ import annotations

from tests.conftest import findings, snapshot


def test_cfg004_says_when_its_suggestion_belongs_to_another_trl_era():
    from tests.conftest import LEGACY, MODERN

    (modern,) = [
        f for f in findings(snapshot(1, packages=MODERN), config={"vllm_devic": "auto"}) if f.rule == "CFG004"
    ]
    assert "`vllm_device`" in modern.message and "not of the installed TRL" in modern.message
    assert "replaced `vllm_device` with" in modern.fix
    (legacy,) = [
        f for f in findings(snapshot(1, packages=LEGACY), config={"vllm_devic": "auto"}) if f.rule == "CFG004"
    ]
    assert "installed TRL" not in legacy.message and legacy.fix == "rename `vllm_devic` to `vllm_device`"


def _cfg001(trl: str, config: dict) -> list:
    from tests.conftest import MODERN

    return [
        f for f in findings(snapshot(1, packages={**MODERN, "trl": trl}), config=config) if f.rule == "CFG001"
    ]


def test_cfg001_vllm_gpu_memory_utilization_is_live_again_from_trl_018():
    """Issue 13 item 2: deprecated (and ignored) only in TRL 0.16-0.17; TRL 0.18 made it the
    colocate knob, so TRL 1.16 with vllm_mode colocate must not hear 'deprecated'."""
    cfg = {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}
    assert _cfg001("1.16.0", cfg) == []
    assert _cfg001("0.18.0", cfg) == []
    (old,) = _cfg001("0.16.1", {"use_vllm": True, "vllm_gpu_memory_utilization": 0.3})
    assert "deprecated in TRL 0.16.1" in old.message and old.severity.value == "info"
    assert "TRL 0.18.0 no longer deprecates it" in old.message


def test_every_deprecation_is_info_in_its_window_and_fails_only_once_removed():
    """docs/report.md#deprecations: a deprecated key still works in the TRL that runs (advice,
    info, naming the release that removes it); only the release that rejects it fails. Every
    deprecation window of the knowledge follows it (TRL 0.26's max_prompt_length: a warning on
    TRL's own v0.26.0 examples before)."""
    from envdoctor.knowledge import knowledge

    keys = knowledge().grpo_keys["keys"]
    # a TrainingArguments field TRL re-declares (use_liger_kernel, deprecated in GRPOConfig from
    # 1.15) stays accepted through the base class: CFG001 does not judge those
    windows = {
        k: e
        for k, e in keys.items()
        if e.get("deprecated_help") and not e.get("overrides_training_arguments")
    }
    assert {"max_prompt_length", "use_liger_loss", "vllm_device", "wandb_log_unique_prompts"} <= set(windows)
    for key, entry in windows.items():
        dep = entry["deprecated_help"]
        for trl in (dep["first"], dep["last"]):
            (hit,) = _cfg001(trl, {key: 1})
            assert hit.severity.value == "info", (key, trl, hit.message)
            assert f"deprecated in TRL {trl}" in hit.message
            if entry.get("until"):
                assert f"TRL {entry['until']} removes it" in hit.message, hit.message
        if entry.get("until"):
            (gone,) = _cfg001(entry["until"], {key: 1})
            assert gone.severity.value in ("warning", "error") and "removed" in gone.message, key


def test_a_declared_range_that_admits_the_removal_warns_and_an_exact_pin_in_the_window_is_info(tmp_path):
    """The policy's other half: a repository whose declared TRL range admits the release that
    removed a deprecated key is warned (DCL001); one pinned inside the window gets info only."""
    from tests.conftest import run_cli

    (tmp_path / "grpo.yaml").write_text("use_vllm: true\nnum_generations: 4\nmax_prompt_length: 256\n")
    said = {}
    for pin in ("trl>=0.26.0,<0.29", "trl==0.26.0", "trl>=0.26.0"):
        (tmp_path / "requirements.txt").write_text(pin + "\n")
        out = run_cli("hook", "--format", "json", "grpo.yaml", cwd=tmp_path)
        import json

        found = json.loads(out.stdout)["files"][0]["report"]["findings"]
        said[pin] = {(f["rule"], f["severity"]) for f in found if "max_prompt_length" in f["message"]}
    assert ("DCL001", "warning") in said["trl>=0.26.0,<0.29"]
    assert said["trl==0.26.0"] == {("CFG001", "info")}
    # no upper bound: a fresh install resolves the newest release, which refuses it (DCL009)
    assert ("DCL009", "error") in said["trl>=0.26.0"]


def test_cfg001_deprecated_key_names_trls_replacement():
    (hit,) = _cfg001("1.16.0", {"use_transformers_paged": True})
    assert "deprecated" in hit.message and "use_transformers_continuous_batching" in hit.fix
