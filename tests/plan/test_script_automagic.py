"""IPython runs a bare ``pip install …`` / ``conda install …`` line as the %pip / %conda magic
(automagic, on by default; Colab's cells and the Hugging Face course's chapter 12 Unsloth notebook
write it so): such a line in a notebook's cells is read like ``!pip install``, so the script is
read (it imports Unsloth, whose GRPOConfig rewrites the batch: CFG002 says so at info) instead of
"not valid Python" and a warning. Issue 35."""

from __future__ import annotations

from envdoctor.plan.script_reader import parse_source
from tests.conftest import findings, snapshot

COURSE = """\
pip install unsloth vllm
pip install --upgrade pillow

# ---- next block ----
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained("unsloth/gemma-3-1b-it", fast_inference=True)
args = GRPOConfig(output_dir="out", per_device_train_batch_size=1, num_generations=6)
"""


def test_bare_pip_and_conda_lines_are_magics():
    tree, problem = parse_source(COURSE.encode(), "train.py")
    assert problem is None and tree is not None
    tree, problem = parse_source(b"conda install -y git\nimport os\n", "t.py")
    assert problem is None
    # Python that merely starts with the word is Python, and broken Python stays broken
    tree, problem = parse_source(b"pip = 3\nprint(pip)\n", "t.py")
    assert problem is None
    _, problem = parse_source(b"pip install x\nnot python(\n", "t.py")
    assert problem is not None


def test_the_course_notebook_is_read_and_unsloths_batch_rewrite_is_said(tmp_path):
    (tmp_path / "train.py").write_text(COURSE)
    stack = {
        "trl": "0.22.2",
        "vllm": "0.10.2",
        "torch": "2.8.0",
        "transformers": "4.56.2",
        "unsloth": "2025.9.1",
    }
    found = findings(snapshot(1, packages=stack), launch=f"python {tmp_path / 'train.py'}")
    (f,) = [f for f in found if f.rule == "CFG002"]
    assert f.severity.value == "info" and "imports Unsloth" in f.message
