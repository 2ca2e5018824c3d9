"""plan.train_calls: the adapter, input-grad and resume facts of a training script's code (read
from its syntax tree; bounded, never raising on what a file holds)."""

from __future__ import annotations

import time

from envdoctor.plan.train_calls import read_train_calls


def _read(tmp_path, text: str | bytes):
    path = tmp_path / "train.py"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return read_train_calls((str(path),))


def test_the_facts_and_how_sure_each_is(tmp_path):
    got = _read(
        tmp_path,
        "peft = LoraConfig(r=8)\n"
        "trainer = GRPOTrainer(model='m', peft_config=peft)\n"
        "ckpt = get_last_checkpoint('o')\n"
        "trainer.train(ckpt)\n",
    )
    assert got.peft is not None and got.peft.how == "always" and got.peft.where.endswith("train.py:2")
    assert got.resume is not None and got.resume.how == "maybe"
    assert "resume_from_checkpoint=ckpt" in got.resume.text
    assert got.input_grads is None


def test_config_reads_and_input_grads(tmp_path):
    got = _read(
        tmp_path,
        "t = GRPOTrainer(peft_config=get_peft_config(model_args))\n"
        "t.model.enable_input_require_grads()\n"
        "self.trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)\n",
    )
    assert got.peft is not None and got.peft.how == "config:use_peft"
    assert got.input_grads is not None and got.input_grads.startswith("enable_input_require_grads")
    assert got.resume is not None and got.resume.how == "config:resume_from_checkpoint"


def test_none_and_false_hand_nothing(tmp_path):
    text = "p = None\nt = GRPOTrainer(peft_config=p)\nt.train(resume_from_checkpoint=False)\nt.train()\n"
    got = _read(tmp_path, text)
    assert got.peft is None and got.resume is None


def test_hostile_files_read_as_nothing_and_fast(tmp_path):
    for text in (b"\x00\xff" * 1000, "(" * 100_000, "x = [" + "[" * 5000 + "]" * 5000 + "]\n", "def f(:\n"):
        start = time.perf_counter()
        got = _read(tmp_path, text)
        assert got.peft is None and got.resume is None
        assert time.perf_counter() - start < 2
    big = "x = 1\n" * 400_000  # past the bound: not read
    assert _read(tmp_path, big + "GRPOTrainer(peft_config=LoraConfig())\n").peft is None
    assert read_train_calls(("/nonexistent/train.py",)).peft is None
