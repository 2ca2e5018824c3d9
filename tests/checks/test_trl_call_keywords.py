"""CFG008: a keyword the training script gives TRL's GRPOTrainer (or a method of the trainer it
built) that the TRL release that runs does not take is a TypeError at that call; read from the
symbol history of TRL's releases (rules/knowledge/symbols/trl.json.gz). Issue 35: the fourth
held-out set had three (GRPOTrainer(reward_kwargs=…) on TRL 0.14.0, GRPOTrainer(eval_funcs=…) of an
author's fork, trainer.create_model_card(finetuned_from=…) on TRL 0.15's main)."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.48.3"}
SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer as Trainer

args = GRPOConfig(output_dir="out")
trainer = Trainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=args{extra})
trainer.train()
trainer.create_model_card(model_name="m"{card})
"""


def _cfg008(tmp_path, trl: str, extra: str = "", card: str = ""):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(extra=extra, card=card))
    found = findings(snapshot(2, packages={**STACK, "trl": trl}), launch=f"python {script}")
    return [f for f in found if f.rule == "CFG008"]


def test_a_keyword_the_release_lacks_is_an_error_at_the_call(tmp_path):
    (f,) = _cfg008(tmp_path, "0.14.0", extra=", reward_kwargs={'k': 1}")
    assert f.severity.value == "error"
    assert "GRPOTrainer(reward_kwargs=…)" in f.message and "train.py:4" in f.message
    assert "TRL 0.14.0" in f.message and "at init" in f.message
    assert f.evidence["keyword"] == "reward_kwargs"


def test_a_keyword_a_later_release_added_names_the_releases_that_take_it(tmp_path):
    (f,) = _cfg008(tmp_path, "0.25.0", extra=", tools=[]")
    assert f.severity.value == "error"
    assert f.evidence["takes"].startswith("TRL 0.26.0–") and "pip install 'trl==" in f.fix


def test_a_method_of_the_built_trainer_is_checked_too(tmp_path):
    (f,) = _cfg008(tmp_path, "0.15.2", card=", finetuned_from='base'")
    assert "create_model_card(finetuned_from=…)" in f.message and "train.py:6" in f.message


def test_keywords_the_release_takes_are_quiet(tmp_path):
    assert _cfg008(tmp_path, "0.14.0", extra=", peft_config=None", card=", tags=['x']") == []
    assert _cfg008(tmp_path, "0.26.0", extra=", tools=[]") == []


def test_a_release_past_the_history_is_not_judged(tmp_path):
    assert _cfg008(tmp_path, "9.0.0", extra=", reward_kwargs={}") == []


def test_a_dev_build_is_placed_between_its_releases_and_said_as_a_warning(tmp_path):
    """open-r1 PR 171: TRL main (0.15.0.dev0) and create_model_card(finetuned_from=…); neither
    0.14.0 nor 0.15.0 takes it: a warning (the build's own signature is not in the history),
    never an error."""
    (f,) = _cfg008(tmp_path, "0.15.0.dev0", card=", finetuned_from='base'")
    assert f.severity.value == "warning"
    assert f.evidence["between"] == ["0.14.0", "0.15.0"] and "most likely" in f.message


def test_a_dev_build_whose_releases_take_the_keyword_is_quiet(tmp_path):
    # both 0.14.0 and 0.15.0 take tags=; a keyword only one side takes is not said either
    assert _cfg008(tmp_path, "0.15.0.dev0", card=", tags=['x']") == []
    assert _cfg008(tmp_path, "0.26.0.dev0", extra=", tools=[]") == []


def test_keywords_of_a_mapping_spread_into_the_call_are_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        SCRIPT.format(extra="", card="").replace(
            'trainer.create_model_card(model_name="m")',
            'kwargs = {"finetuned_from": "base", "tags": ["x"]}\ntrainer.create_model_card(**kwargs)',
        )
    )
    found = findings(snapshot(2, packages={**STACK, "trl": "0.15.2"}), launch=f"python {script}")
    (f,) = [f for f in found if f.rule == "CFG008"]
    assert f.evidence["keyword"] == "finetuned_from" and f.severity.value == "error"


def test_the_hook_judges_a_scripts_calls_where_its_config_is_a_yaml_file(tmp_path):
    """sree-sphere/open-r1-text2graph: src/grpo.py parses its config with TrlParser and builds
    GRPOTrainer(reward_kwargs=…); requirements.txt pins trl==0.14.0. The hook judges only the
    calls of such a script (its config comes from elsewhere)."""
    from tests.conftest import run_cli

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "grpo.py").write_text(
        "from trl import GRPOTrainer, TrlParser, GRPOConfig\n\n"
        "args = TrlParser((GRPOConfig,)).parse_args_and_config()[0]\n"
        "trainer = GRPOTrainer(model='m', reward_funcs=[], args=args, reward_kwargs={'k': 1})\n"
    )
    (tmp_path / "requirements.txt").write_text("trl==0.14.0\nvllm==0.7.0\n")
    out = run_cli("hook", "requirements.txt", cwd=tmp_path)
    text = " ".join(out.stdout.split())
    assert out.returncode == 1 and "CFG008 `GRPOTrainer(reward_kwargs=…)` in src/grpo.py:4" in text
    assert "CFG002" not in text and "CFG001" not in text  # nothing else judged on that script
    fine = run_cli("hook", "requirements.txt", "--ignore", "CFG008", cwd=tmp_path)
    assert fine.returncode == 0, fine.stdout


def test_the_shipped_call_table_is_the_one_the_history_gives():
    """check reads GRPOTrainer's signatures from a few-KB table beside TRL's history (the whole
    history is ~50 ms to parse); scripts/derive_symbol_history.py writes both, and they agree."""
    import json

    from envdoctor.knowledge.symbol_history import _dir, call_table, history

    h = history("trl")
    assert h is not None
    shipped = json.loads((_dir() / "trl.GRPOTrainer.json").read_text())
    assert shipped == json.loads(json.dumps(call_table(h, "GRPOTrainer")))
    assert "reward_processing_classes" in shipped["methods"]["__init__"]


def test_unsloths_patched_trainer_takes_tokenizer_where_trl_takes_processing_class(tmp_path):
    """Importing unsloth replaces TRL's trainers with Unsloth's, which add ``tokenizer`` and pass
    it on as ``processing_class`` (unsloth/models/rl.py, unslothai/unsloth#1701): a published
    text-to-SQL run of 1,390 steps built ``GRPOTrainer(tokenizer=…)`` on TRL 0.22.2 so. Without
    unsloth the same call is TRL's TypeError."""
    (f,) = _cfg008(tmp_path, "0.22.2", extra=", tokenizer=None")
    assert f.evidence["keyword"] == "tokenizer"
    script = tmp_path / "train.py"
    text = SCRIPT.format(extra=", tokenizer=None", card="")
    script.write_text("from unsloth import FastLanguageModel\n" + text)
    found = findings(snapshot(2, packages={**STACK, "trl": "0.22.2"}), launch=f"python {script}")
    assert [f for f in found if f.rule == "CFG008"] == []


def test_unsloths_patched_trainer_takes_any_keyword_at_init_but_trls_does_not(tmp_path):
    """Unsloth's generated trainer constructor ends in ``**kwargs`` (unsloth/models/rl.py's
    template, every release read from 2025.3): `GRPOTrainer(max_prompt_length=…)` raises no
    TypeError there (held-out set 10: a published Colab run on TRL 1.2 + unsloth drew CFG008);
    the same call on TRL's own trainer does."""
    (f,) = _cfg008(tmp_path, "1.2.0", extra=", max_prompt_length=512")
    assert f.evidence["keyword"] == "max_prompt_length"
    script = tmp_path / "train.py"
    script.write_text(
        "from unsloth import FastLanguageModel\n" + SCRIPT.format(extra=", max_prompt_length=512", card="")
    )
    found = findings(snapshot(2, packages={**STACK, "trl": "1.2.0"}), launch=f"python {script}")
    assert [f for f in found if f.rule == "CFG008"] == []
