"""A published setup's own failure named from what its script hands TRL (issue 35, sets 9 and 10):

- a keyword of TRL's GRPOConfig(...) call that GRPOConfig has in no release (``kl_coef`` in a dict
  the script spreads, patch2prod-arena 730f590; ``max_new_tokens=512`` on TRL 0.14.0,
  AgentDebuggerEnv a5c67b3) is CFG001's error, whatever a config file sets too; a key the script
  passes only where ``"key" in signature(GRPOConfig.__init__).parameters`` (patch2prod 747da3d,
  the fix) stays quiet, while the keys it passes unconditionally are still judged;
- ``import trl as _trl; trl = _trl`` (a lazy import bound to a global, TeamGamesRL 15d1258) is
  TRL's module: its ``trl.GRPOTrainer(tokenizer=…)`` is CFG008's, renamed to
  ``processing_class=`` (transformers' and TRL's rename);
- a snapshot without Requires-Dist reads TRL's own requirements from its release line
  (``trl==0.29.0`` beside ``transformers==4.51.3``, OpenEnvHackathon 5bb8362): PKG004 names TRL's
  ``transformers>=4.56.2``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import findings, run_cli, snapshot

TRL13 = {"trl": "1.3.0", "torch": "2.10.0", "transformers": "4.57.1", "accelerate": "1.12.0"}

SPREAD = """\
import inspect

from trl import GRPOConfig, GRPOTrainer


def main(args):
    grpo_sig = inspect.signature(GRPOConfig.__init__).parameters
    grpo_kwargs = {
        "output_dir": args.out,
        "learning_rate": 5e-6,
        # KL penalty
        "kl_coef": 0.05,
        "save_total_limit": 2,
    }
    if "max_prompt_length" in grpo_sig:
        grpo_kwargs["max_prompt_length"] = 768
    config = GRPOConfig(**grpo_kwargs)
    GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config)
"""

#: the fix the repository made: the key passed only where the installed GRPOConfig takes it
GATE = '    if "kl_coef" in grpo_sig:\n        grpo_kwargs["kl_coef"] = 0.05\n'
CALL = "    config = GRPOConfig("
GATED = SPREAD.replace('        "kl_coef": 0.05,\n', "").replace(CALL, GATE + CALL)


def _rules(found: list, rule: str) -> list:
    return [f for f in found if f.rule == rule]


def _run(tmp_path: Path, script: str, packages: dict, config: dict | None = None) -> list:
    (tmp_path / "train.py").write_text(script)
    return findings(snapshot(1, packages=packages), config=config, launch=f"python {tmp_path / 'train.py'}")


def test_a_key_no_grpoconfig_takes_in_a_spread_dict_is_an_error(tmp_path):
    (f,) = _rules(_run(tmp_path, SPREAD, TRL13), "CFG001")
    assert f.severity.value == "error" and f.evidence["key"] == "kl_coef"
    assert "GRPOConfig(...) in" in f.message and "train.py:17" in f.message
    assert "TypeError" in f.message and "`beta`" in f.message
    assert not [g for g in _rules(_run(tmp_path, SPREAD, TRL13), "CFG004") if "kl_coef" in g.message]


def test_a_config_file_setting_the_key_too_does_not_hide_the_call(tmp_path):
    found = _run(tmp_path, SPREAD, TRL13, config={"kl_coef": 0.05, "output_dir": "o"})
    assert [f.evidence["key"] for f in _rules(found, "CFG001") if f.severity.value == "error"] == ["kl_coef"]


def test_a_key_passed_only_where_the_signature_has_it_is_quiet(tmp_path):
    found = _run(tmp_path, GATED, TRL13)
    assert not [f for f in found if f.rule in ("CFG001", "CFG004") and f.severity.value != "info"]


def test_a_signature_test_of_named_keys_filters_those_keys_only(tmp_path):
    """``max_prompt_length`` is gated (info: the script drops it on TRL 1.3); the same key in the
    dict display itself is passed whatever the signature says: an error."""
    gated = _rules(_run(tmp_path, GATED, TRL13, config={"max_prompt_length": 768}), "CFG001")
    assert [f.severity.value for f in gated] == ["info"]
    both = '"save_total_limit": 2,\n        "max_prompt_length": 512,'
    ungated = GATED.replace('"save_total_limit": 2,', both)
    (f,) = _rules(_run(tmp_path, ungated, TRL13), "CFG001")
    assert f.severity.value == "error" and f.evidence["key"] == "max_prompt_length"


def test_a_literal_keyword_no_release_takes_names_grpoconfigs_own(tmp_path):
    script = (
        "from trl import GRPOConfig\n"
        "config = GRPOConfig(\n"
        "    output_dir='o',\n"
        "    max_new_tokens=512,  # longer responses\n"
        "    temperature=0.9,\n"
        ")\n"
    )
    stack = {"trl": "0.14.0", "torch": "2.5.1", "transformers": "4.46.3", "accelerate": "1.0.1"}
    (f,) = _rules(_run(tmp_path, script, stack), "CFG001")
    assert f.severity.value == "error" and "`max_completion_length`" in f.message
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=stack)))
    args = ["--facts", "facts.json", "--format", "json", "--", "python", "train.py"]
    report = json.loads(run_cli("check", *args, cwd=tmp_path).stdout)
    (said,) = [g for g in report["findings"] if g["rule"] == "CFG001"]
    assert "train.py line 4" in said["fix"]  # the keyword cut from the call, printed as proved


def test_the_fix_takes_the_entry_out_of_the_dict_and_holds(tmp_path):
    (tmp_path / "train.py").write_text(SPREAD)
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=TRL13)))
    args = ["--facts", "facts.json", "--format", "json", "--", "python", "train.py"]
    out = json.loads(run_cli("fix", *args, cwd=tmp_path).stdout)
    assert "CFG001" in out["fixed"]
    assert not [a for a in out["after"]["findings"] if a["severity"] == "error"]
    text = (tmp_path / "train.py").read_text()
    assert '"kl_coef"' not in text and '"save_total_limit": 2,' in text and "# KL penalty" in text
    again = json.loads(run_cli("check", *args, cwd=tmp_path).stdout)
    assert not [a for a in again["findings"] if a["severity"] == "error"]


LAZY = """\
trl = None


def _lazy_import():
    global trl
    if trl is None:
        import trl as _trl
        trl = _trl


class Runner:
    def train(self, model, tok, data):
        _lazy_import()
        config = trl.GRPOConfig(output_dir="o", learning_rate=1e-4)
        trainer = trl.GRPOTrainer(
            model=model,
            reward_funcs=[],
            args=config,
            train_dataset=data,
            {kw}=tok,
        )
        trainer.train()
"""
TRL19 = {"trl": "1.9.2", "torch": "2.11.0", "transformers": "4.57.1", "accelerate": "1.12.0"}


def test_a_lazily_imported_trl_bound_to_a_global_is_trls_module(tmp_path):
    (f,) = _rules(_run(tmp_path, LAZY.format(kw="tokenizer"), TRL19), "CFG008")
    assert f.severity.value == "error" and "GRPOTrainer(tokenizer=…)" in f.message
    assert "rename `tokenizer=` to `processing_class=`" in f.fix


def test_the_lazy_import_with_processing_class_is_quiet(tmp_path):
    assert _rules(_run(tmp_path, LAZY.format(kw="processing_class"), TRL19), "CFG008") == []


def test_trls_release_line_requirements_stand_in_for_a_missing_requires_dist():
    stack = {"trl": "0.29.0", "transformers": "4.51.3", "torch": "2.9.0", "accelerate": "1.6.0"}
    found = [f for f in findings(snapshot(1, packages=stack)) if f.rule == "PKG004"]
    assert any("trl 0.29.0 requires transformers>=4.56.2" in f.message for f in found)
    ok = {**stack, "transformers": "4.56.2"}
    found = [f for f in findings(snapshot(1, packages=ok)) if f.rule == "PKG004"]
    assert not [f for f in found if "trl 0.29.0" in f.message]


def test_a_requirement_whose_installed_version_is_not_recorded_is_not_judged():
    # 0+unknown (versioneer's answer, a harness's "installed, release unknown"): no range judges it
    stack = {"trl": "0.29.0", "transformers": "4.56.2", "torch": "2.9.0", "accelerate": "1.6.0"}
    found = [
        f for f in findings(snapshot(1, packages={**stack, "datasets": "0+unknown"})) if f.rule == "PKG004"
    ]
    assert not [f for f in found if "datasets" in f.message], [f.message for f in found]
    found = [f for f in findings(snapshot(1, packages={**stack, "datasets": "2.0.0"})) if f.rule == "PKG004"]
    assert [f for f in found if "requires datasets>=" in f.message]


def test_a_misspelt_keyword_of_the_call_is_the_same_error_with_the_near_key(tmp_path):
    script = "from trl import GRPOConfig\nconfig = GRPOConfig(output_dir='o', num_generation=4)\n"
    (f,) = _rules(_run(tmp_path, script, TRL13), "CFG001")
    assert f.severity.value == "error" and "did you mean `num_generations`?" in f.message
    assert not _rules(_run(tmp_path, script, TRL13), "CFG004")


def test_a_trainer_parameter_handed_to_the_config_says_whose_it_is(tmp_path):
    """HONEST-RL-Calibrator 307034a (heldout-2026-11-28h): GRPOConfig(environment_factory=…)."""
    script = "from trl import GRPOConfig\nconfig = GRPOConfig(output_dir='o', environment_factory=make_env)\n"
    (f,) = _rules(_run(tmp_path, script, TRL13), "CFG001")
    assert f.severity.value == "error" and "a parameter of GRPOTrainer from TRL 0.29.0" in f.message


def test_unsloths_own_keywords_and_a_forks_config_are_not_judged(tmp_path):
    """Unsloth's patched GRPOConfig takes keywords of its own (unsloth-2846, heldout-2026-11-28c:
    ``vllm_sampling_params``); a fork's GRPOConfig has fields of its own (r1_vlm on groundlight/trl,
    heldout-2026-11-28e: ``limit_image_per_prompt``)."""
    head = "import unsloth\nfrom trl import GRPOConfig\n"
    unsloth = head + "c = GRPOConfig(output_dir='o', vllm_sampling_params=None)\n"
    assert not _rules(_run(tmp_path, unsloth, TRL13), "CFG001")
    # any other keyword goes on to TRL's GRPOConfig (HONEST-RL-Calibrator 307034a, 28h)
    other = head + "c = GRPOConfig(output_dir='o', environment_factory=None)\n"
    assert [f.severity.value for f in _rules(_run(tmp_path, other, TRL13), "CFG001")] == ["error"]
    fork = "from trl import GRPOConfig\nc = GRPOConfig(output_dir='o', limit_image_per_prompt=2)\n"
    forked = {
        **TRL13,
        "trl": {"version": "0.16.0.dev0", "origin": "git+https://github.com/groundlight/trl.git"},
    }
    assert not [f for f in _rules(_run(tmp_path, fork, forked), "CFG001") if f.severity.value != "info"]
    assert _rules(_run(tmp_path, fork, TRL13), "CFG001")  # TRL's own release: the TypeError
