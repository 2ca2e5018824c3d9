"""Mends after held-out set 13: knowledge the set's healthy runs contradicted, read again at the tags."""

from __future__ import annotations

from tests.conftest import MODERN, findings, snapshot


def test_sync_ref_model_with_peft_is_a_setting_without_effect_not_a_crash():
    """TRL 0.14-0.27's SyncRefModelCallback syncs only `if self.ref_model is not None`: with PEFT it
    skips every sync (no crash); the run trains, so it is advice, not an error."""
    snap = snapshot(1, packages={**MODERN, "trl": "0.20.0", "peft": "0.15.0"})
    cfg = {"sync_ref_model": True, "use_peft": True}
    (f,) = [f for f in findings(snap, config=cfg) if "sync_ref_model" in f.message]
    assert f.severity.value == "info" and "does nothing" in f.message
    refused = snapshot(1, packages={**MODERN, "trl": "0.28.0", "peft": "0.15.0"})
    assert any(
        "sync_ref_model" in f.message and f.severity.value == "error" for f in findings(refused, config=cfg)
    )


def test_vllm_0_7_1_is_inside_the_range_of_trl_0_14_and_0_15():
    """TRL 0.14.0's extra has no vLLM floor and 0.15.0's asks >=0.7.1 (its device fix): PKG006 does
    not warn on 0.7.1 (PKG003 says its advice), and warns below it no longer than PKG002 errs."""
    for trl in ("0.14.0", "0.15.0.dev0", "0.15.1"):
        snap = snapshot(2, packages={**MODERN, "trl": trl, "vllm": "0.7.1", "transformers": "4.49.0"})
        assert not [f for f in findings(snap, config={"use_vllm": True}) if f.rule == "PKG006"], trl


def _eval(trl: str, **cfg):
    snap = snapshot(1, packages={**MODERN, "trl": trl})
    base = {"num_generations": 21, "per_device_train_batch_size": 21, "eval_strategy": "steps"}
    return [f for f in findings(snap, config={**base, **cfg}) if f.rule == "CFG002"]


def test_an_eval_batch_the_generations_do_not_divide_is_refused_with_evaluation_on():
    """TRL checks the eval batch as it does the train batch when evaluation is on (0.15-0.19 and
    from 0.22; the default per_device_eval_batch_size is 8)."""
    for trl in ("0.19.1", "0.22.0", "1.16.0"):
        (f,) = _eval(trl)
        assert f.severity.value == "error" and "eval batch 8" in f.message, trl
        assert "per_device_eval_batch_size: 21" in f.fix


def test_the_eval_batch_is_quiet_without_evaluation_where_trl_checks_none_or_where_it_divides():
    assert not _eval("1.16.0", eval_strategy="no")
    assert not _eval("0.20.0")  # 0.20-0.21 dropped the eval check
    assert not _eval("1.16.0", per_device_eval_batch_size=42)
    assert not _eval("1.16.0", num_generations_eval=4)  # from 0.27 the eval generations count first


def test_a_key_the_dev_build_of_its_release_may_take_is_advice_even_where_the_parser_drops_keys():
    snap = snapshot(1, packages={**MODERN, "trl": "0.15.0.dev0", "vllm": "0.7.1", "transformers": "4.49.0"})
    (f,) = [
        f for f in findings(snap, config={"use_vllm": True, "vllm_dtype": "bfloat16"}) if f.rule == "CFG001"
    ]
    assert f.severity.value == "info" and "development build" in f.message


def test_the_eval_batch_fix_counts_the_processes_it_is_multiplied_by():
    """per_device_eval_batch_size 2 on 2 processes with 8 generations: the multiple is 4 (4 × 2 = 8),
    not the 2 that the global batch's own gcd gives (which names the value already set)."""
    snap = snapshot(2, packages={**MODERN, "trl": "1.16.0"})
    cfg = {"num_generations": 8, "per_device_train_batch_size": 8, "per_device_eval_batch_size": 2}
    launch = "accelerate launch --num_processes 2 train.py"
    (f,) = [
        f
        for f in findings(snap, config={**cfg, "eval_strategy": "steps"}, launch=launch)
        if f.rule == "CFG002"
    ]
    assert f.fix.startswith("set per_device_eval_batch_size: 4 (a multiple of 4)")
    train = {**cfg, "per_device_train_batch_size": 2}
    (g,) = [f for f in findings(snap, config=train, launch=launch) if f.rule == "CFG002"]
    assert "per_device_train_batch_size a multiple of 4" in g.fix
