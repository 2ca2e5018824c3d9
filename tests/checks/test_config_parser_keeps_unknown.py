"""A training script whose TrlParser hands back the config keys no dataclass has
(``parse_args_and_config(return_remaining_strings=True)``, or ``fail_with_unknown_args=False``)
is not refused by TRL for a key this release lacks (trl/scripts/utils.py, TrlParser at v0.28.0:
the remaining strings are returned, the ValueError is raised only when neither is given): CFG001
says the key has no effect (info), where the same script parsing strictly is refused (an error).
Issue 35: a published TRL 0.28 FSDP run whose YAML kept ``max_prompt_length`` trained."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot

STACK = {"trl": "0.28.0", "torch": "2.9.0", "transformers": "4.57.3"}
CONFIG = {"per_device_train_batch_size": 8, "num_generations": 8, "max_prompt_length": 1024}

SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer, ModelConfig, ScriptArguments, TrlParser


def main():
    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig))
    script_args, training_args, model_args{rest} = parser.parse_args_and_config({kw})
    GRPOTrainer(model=model_args.model_name_or_path, args=training_args)
"""


def _cfg001(tmp_path, kw: str, rest: str = ""):
    (tmp_path / "train.py").write_text(SCRIPT.format(kw=kw, rest=rest))
    (tmp_path / "grpo.yaml").write_text("".join(f"{k}: {v}\n" for k, v in CONFIG.items()))
    launch = f"accelerate launch {tmp_path / 'train.py'} --config {tmp_path / 'grpo.yaml'}"
    found = findings(snapshot(1, packages=STACK), config=CONFIG, launch=launch)
    return [f for f in found if f.rule == "CFG001"]


@pytest.mark.parametrize(
    ("kw", "rest", "said"),
    [
        ("return_remaining_strings=True", ", _", "return_remaining_strings=True"),
        ("fail_with_unknown_args=False", "", "fail_with_unknown_args=False"),
    ],
)
def test_a_parser_that_hands_back_unknown_keys_drops_the_key(tmp_path, kw, rest, said):
    (f,) = _cfg001(tmp_path, kw, rest)
    assert f.severity.value == "info"
    assert f"parse_args_and_config({said}) in" in f.message and "train.py:6" in f.message
    assert "no effect" in f.message and "refuses" not in f.message


def test_the_same_script_parsing_strictly_is_refused(tmp_path):
    (f,) = _cfg001(tmp_path, "")
    assert f.severity.value == "error" and "removed from GRPOConfig in TRL 0.28.0" in f.message
    (f,) = _cfg001(tmp_path, "return_remaining_strings=False")
    assert f.severity.value == "error"
