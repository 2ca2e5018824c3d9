"""CFG011: a repository class deriving from TRL's GRPOTrainer overrides a method the trainer calls
on itself with parameters the TRL that runs does not pass (rules/knowledge/trl_hook_calls.json).
Set 18's thread-text-protocol-predictor-e4959ce: ``_generate_and_score_completions(self, inputs,
mode)`` under trl>=0.29.1,<0.30, which calls it with inputs only (fixed upstream in ee1aaca,
https://github.com/NRshka/text-protocol-predictor/commit/ee1aaca912539d34ea50a14ce40c8a69f14ac737)."""

from __future__ import annotations

from envdoctor.knowledge.trl_hook_calls import binds, judge
from tests.conftest import findings, snapshot

STACK = {"torch": "2.9.0", "transformers": "4.57.3", "vllm": "0.12.0"}
TRAINER = """\
from trl import GRPOTrainer


def train(model, args):
    class ProtocolGRPOTrainer(GRPOTrainer):
        def {method}(self, {params}):
            return super().{method}({passed})

    trainer = ProtocolGRPOTrainer(model=model, reward_funcs=[], args=args)
    trainer.train()
"""
SCRIPT = """\
from trl import GRPOConfig
from pkg.training.trainer import train

train("Qwen/Qwen2.5-0.5B", GRPOConfig(output_dir="out"))
"""


def _cfg011(tmp_path, trl: str, params: str, method: str = "_generate_and_score_completions", imports=None):
    (tmp_path / "pkg" / "training").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "training" / "__init__.py").write_text("")
    passed = ", ".join(p.split("=")[0].split(":")[0] for p in params.split(", ") if p)
    trainer = TRAINER.format(method=method, params=params, passed=passed)
    if imports:
        trainer = imports + "\n" + trainer
    (tmp_path / "pkg" / "training" / "trainer.py").write_text(trainer)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    found = findings(snapshot(2, packages={**STACK, "trl": trl}), launch=f"python {script}")
    return [f for f in found if f.rule == "CFG011"]


def test_an_override_with_a_parameter_trl_does_not_pass_is_an_error_at_its_line(tmp_path):
    (f,) = _cfg011(tmp_path, "0.29.1", "inputs, mode")
    assert f.severity.value == "error"
    assert "trainer.py:6" in f.message and "TRL 0.29.1" in f.message
    assert "GRPOTrainer._generate_and_score_completions" in f.message
    assert "def _generate_and_score_completions(self, inputs)" in f.fix
    assert f.evidence["calls"] == ["1;"]


def test_an_override_taking_kwargs_or_matching_is_quiet(tmp_path):
    assert _cfg011(tmp_path, "0.29.1", "inputs, *args, **kwargs") == []


def test_a_matching_override_is_quiet(tmp_path):
    assert _cfg011(tmp_path, "0.29.1", "inputs") == []


def test_an_optional_extra_parameter_is_quiet(tmp_path):
    assert _cfg011(tmp_path, "1.16.0", "inputs, mode=None") == []


def test_a_signature_some_releases_call_names_them_and_the_pin(tmp_path):
    """_get_per_token_logps(model, input_ids, attention_mask, logits_to_keep): TRL 0.17 calls it
    also with batch_size by position (one path of two): a warning naming the releases that fit."""
    (f,) = _cfg011(
        tmp_path, "0.17.0", "model, input_ids, attention_mask, logits_to_keep", method="_get_per_token_logps"
    )
    assert f.severity.value == "warning"
    assert "0.15.0" in f.evidence["fits"] and "trl==" in f.fix


def test_a_transformers_hook_without_num_items_in_batch_is_an_error(tmp_path):
    (f,) = _cfg011(tmp_path, "0.29.1", "model, inputs, return_outputs=False", method="compute_loss")
    assert f.severity.value == "error" and "num_items_in_batch" in f.message
    assert (
        _cfg011(
            tmp_path / "b", "0.29.1", "model, inputs, return_outputs=False, **kwargs", method="compute_loss"
        )
        == []
    )


def test_binding_follows_pythons_rules():
    assert binds("inputs", "1;") and not binds("inputs,mode", "1;")
    assert binds("inputs,*args,**", "2;") and binds("a,b=", "1;b") and not binds("a", "1;a")
    assert not binds("a", "2;") and binds("a,*,k", "1;k") and not binds("a,*,k", "1;")


def test_a_release_outside_the_table_is_not_judged():
    assert judge("GRPOTrainer", "_generate_and_score_completions", "inputs,mode", "9.9.9") is None


DRIVEN = """\
from trl import GRPOTrainer, GRPOConfig


class Base(GRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        mode = "train" if self.model.training else "eval"
        return self._generate_and_score_completions(generation_batch, mode)

    def _generate_and_score_completions(self, inputs, mode):
        return super()._generate_and_score_completions(inputs)


class Child(Base):
    def _generate_and_score_completions(self, inputs, mode):
        return super()._generate_and_score_completions(inputs, mode)


trainer = Child(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=GRPOConfig(output_dir="o"))
trainer.train()
"""


def _script_cfg011(tmp_path, text: str, trl: str):
    script = tmp_path / "train.py"
    script.write_text(text)
    found = findings(snapshot(2, packages={**STACK, "trl": trl}), launch=f"python {script}")
    return [f for f in found if f.rule == "CFG011"]


def test_an_override_the_project_calls_itself_from_its_own_caller_is_quiet(tmp_path):
    """Issue #35: the project overrides ``_prepare_inputs`` (TRL's caller) to pass ``mode``: its
    ``_generate_and_score_completions(self, inputs, mode)`` and a subclass's of it bind every call
    made; TRL's one-argument call is replaced."""
    assert _script_cfg011(tmp_path, DRIVEN, "0.29.1") == []
    # without the caller's override TRL's call reaches it: the error stays
    alone = DRIVEN.replace(
        "    def _prepare_inputs(self, generation_batch):\n", "    def _other(self, generation_batch):\n"
    )
    alone = alone.replace("self._generate_and_score_completions(generation_batch, mode)", "None")
    assert {f.evidence["override"] for f in _script_cfg011(tmp_path, alone, "0.29.1")} == {"Base", "Child"}


def test_the_bound_first_parameter_is_dropped_whatever_its_name(tmp_path):
    """``def _get_per_token_logps(trainer, model, …)``: ``trainer`` is the bound instance, not a
    fifth positional parameter (TRL 0.17 calls it with 4 and 5 arguments by position)."""
    text = TRAINER.format(
        method="_get_per_token_logps",
        params="model, input_ids, attention_mask, logits_to_keep, batch_size=None",
        passed="model, input_ids, attention_mask, logits_to_keep, batch_size",
    ).replace("(self, model", "(trainer, model")
    assert "(trainer, model" in text
    assert _script_cfg011(tmp_path, text + "\ntrain('m', None)\n", "0.17.0") == []


def test_a_staticmethod_keeps_its_first_parameter():
    import ast

    from envdoctor.knowledge.trl_hook_calls import signature_text

    static, plain = (
        ast.parse("class A:\n @staticmethod\n def f(x, y): pass\n def g(me, y=1): pass\n").body[0].body
    )
    assert signature_text(static) == "x,y" and signature_text(plain) == "y="
