"""A catalogue entry about GRPOConfig's keys names its failure only where GRPOConfig (or a
wrapper's subclass of it) refuses the keyword, not where another class does."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes


@pytest.mark.parametrize(
    ("callee", "named"),
    [
        ("GRPOConfig.", True),
        ("UnslothGRPOConfig.", True),  # a wrapper's subclass of GRPOConfig
        ("", True),  # Python < 3.10 names no class
        ("mDPODataCollatorBunny.", False),  # a project's own class refusing the same keyword
    ],
)
def test_a_removed_grpo_config_key_is_named_only_where_grpo_config_refuses_it(callee, named):
    """GRPOConfig's removed keys are GRPOConfig's failure; a project's own class that refuses a
    keyword of the same name (its DPO collator, written against an older TRL) is another one."""
    text = f"TypeError: {callee}__init__() got an unexpected keyword argument 'max_prompt_length'\n"
    ids = {f.evidence.get("known_failure") for f in findings(scan_bytes(text))}
    assert ("grpo-config-max-prompt-length-removed-0.28" in ids) is named


@pytest.mark.parametrize(("attr", "named"), [("warnings_issued", True), ("transformer", False)])
def test_a_value_head_model_is_grpos_failure_only_where_grpo_reads_what_it_lacks(attr, named):
    """GRPOTrainer reads model.warnings_issued, which the value-head wrapper lacks; the PPO
    trainers it is made for read others of it ('transformer'): ms-swift's PPO on a GLM model is no
    GRPO failure (held-out set 7, mended after its measurement)."""
    text = f"AttributeError: 'AutoModelForCausalLMWithValueHead' object has no attribute '{attr}'\n"
    ids = {f.evidence.get("known_failure") for f in findings(scan_bytes(text))}
    assert ("trl-grpo-value-head-model" in ids) is named
