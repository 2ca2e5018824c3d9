"""A TRL trainer handed a plain ``TrainingArguments`` (TRI009 through ``symbols.subclass_attribute``):
the trainer's frame reads one of its own configuration's fields; the answer names that trainer's
configuration class (DPOTrainer -> DPOConfig), not the first subclass of the history. The shape is
an executed notebook's (DPOTrainer.__init__ reading ``args.model_init_kwargs``, TRL 0.9)."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

FRAMED = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/cs234/train_dpo.py", line 40, in <module>\n'
    "    trainer = DPOTrainer(model, ref_model, args=args, train_dataset=train_dataset)\n"
    '  File "/home/u/venv/lib/python3.10/site-packages/trl/trainer/dpo_trainer.py", line 174, in __init__\n'
    "    if args.model_init_kwargs is None:\n"
    "AttributeError: 'TrainingArguments' object has no attribute 'model_init_kwargs'\n"
)


def _tri009(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def test_the_trainer_frame_names_its_own_configuration_class() -> None:
    (f,) = _tri009(FRAMED)
    assert f.severity.value == "error"
    assert f.message.startswith("DPOTrainer (trl trainer/dpo_trainer.py:174) reads model_init_kwargs")
    assert "DPOConfig has it" in f.message
    assert f.fix.startswith("pass args=DPOConfig(...) (from trl import DPOConfig) to DPOTrainer")


def test_without_a_frame_the_subclasses_are_listed_and_no_trainer_is_named() -> None:
    (f,) = _tri009("AttributeError: 'TrainingArguments' object has no attribute 'model_init_kwargs'\n")
    assert f.message.startswith("your code reads model_init_kwargs from a TrainingArguments")
    assert "pass args=" not in f.fix
    # which trainer read it is not shown: the fix names the class of each common trainer that has
    # the field, not GRPOConfig alone (set 22's g003 was a DPOTrainer run told to build a GRPOConfig)
    assert "DPOConfig for DPOTrainer" in f.fix and "GRPOConfig for GRPOTrainer" in f.fix


def test_quiet_where_the_base_class_has_the_attribute() -> None:
    text = FRAMED.replace("model_init_kwargs", "output_dir")  # every TrainingArguments has it
    assert not any("reads output_dir from a TrainingArguments" in f.message for f in _tri009(text))
