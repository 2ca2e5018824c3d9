"""A known failure that a library patches away when the training script imports it
(``when.unless_imported``): Unsloth 2025.11.6 and newer set vLLM's removed GuidedDecodingParams to
StructuredOutputsParams on import (unslothai/unsloth#3663, unsloth/import_fixes.py
fix_vllm_guided_decoding_params), so TRL 0.22's import of it goes through on vLLM 0.15. Issue 35:
an Unsloth notebook healthy as published got a KNF001 error. A notebook's cells with their IPython
magics (``!pip install``, ``%%capture``) are read as Python."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"trl": "0.22.2", "vllm": "0.15.1", "torch": "2.9.1", "transformers": "4.56.2"}
ID = "trl-guided-decoding-params-vllm-0.12"
NOTEBOOK = """\
%%capture
import os
if "COLAB_" not in "".join(os.environ.keys()):
    !pip install unsloth vllm
else:
    pass
!uv pip install --no-deps trl==0.22.2

# ---- next cell ----
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained("unsloth/Qwen2.5-3B-Instruct", fast_inference=True)
args = GRPOConfig(output_dir="out", per_device_train_batch_size=8, num_generations=8)
"""


def _guided(tmp_path, body: str | None, unsloth: str | None):
    script = tmp_path / "train.py"
    if body is not None:
        script.write_text(body)
    packages = {**STACK, **({"unsloth": unsloth} if unsloth else {})}
    found = findings(snapshot(1, packages=packages), launch=f"python {script}")
    return [f for f in found if f.rule == "KNF001" and f.evidence.get("id") == ID]


def test_a_notebook_that_imports_unsloth_escapes_it_said_at_info(tmp_path):
    (f,) = _guided(tmp_path, NOTEBOOK, "2025.12.1")
    assert f.severity.value == "info"
    assert "imports unsloth" in f.message and ">=2025.11.6" in f.message
    assert f.evidence["patched_by"] == "unsloth"
    assert any("unslothai/unsloth" in r for r in f.evidence["references"])
    (g,) = _guided(tmp_path, NOTEBOOK, None)  # imported, its release not known: installed there
    assert g.severity.value == "info"


def test_an_unsloth_before_the_patch_or_a_script_without_it_still_fails(tmp_path):
    (old,) = _guided(tmp_path, NOTEBOOK, "2025.11.5")
    assert old.severity.value == "error"
    plain = NOTEBOOK.replace("from unsloth import FastLanguageModel\n", "")
    (f,) = _guided(tmp_path, plain, "2025.12.1")
    assert f.severity.value == "error"


def test_unsloth_in_the_stack_and_the_script_unread_is_a_warning_saying_why(tmp_path):
    (f,) = _guided(tmp_path, None, "2025.12.1")  # no such script: not read
    assert f.severity.value == "warning"
    assert "unless the training script imports unsloth >=2025.11.6" in f.message


def test_notebook_magics_are_read_as_python_and_line_numbers_kept(tmp_path):
    from envdoctor.plan.script_reader import parse_source

    tree, problem = parse_source(NOTEBOOK.encode(), "train.py")
    assert problem is None and tree is not None
    imports = [n for n in tree.body if type(n).__name__ == "ImportFrom"]
    assert imports[0].module == "unsloth" and imports[0].lineno == 10
    _, bad = parse_source(b"%%bash\necho hi\nnot python at all(\n", "x.py")
    assert bad is not None and "not valid Python" in bad


def test_notebook_magic_continuations_and_shell_cells_are_read(tmp_path):
    """A magic line's backslash continues it (`!uv pip install … \\` and the line after it), and a
    `%%bash` cell's body is the shell's, not Python: the script is still read (Unsloth's T4
    notebooks: the Colab install cell)."""
    from envdoctor.plan.script_reader import parse_source

    body = """\
# %% [code cell]
%%capture
import os
if "COLAB_" in "".join(os.environ.keys()):
    !uv pip install -qqq --upgrade \\
        unsloth {get_vllm} torchvision
# %% [code cell]
%%bash
echo $HOME && for f in *.txt; do cat "$f"; done
# %% [code cell]
from unsloth import FastLanguageModel
"""
    tree, why = parse_source(body.encode(), "train.py")
    assert why is None and tree is not None
    assert [n.module for n in tree.body if n.__class__.__name__ == "ImportFrom"] == ["unsloth"]
    # still not Python without the magics: a plain syntax error is said as before
    tree, why = parse_source(b"def f(:\n    pass\n", "train.py")
    assert tree is None and why and "not valid Python" in why


WARNINGS = {"trl": "0.23.0", "torch": "2.9.1", "transformers": "5.4.0"}
WARNINGS_ID = "trl-warnings-issued-transformers-5.1"
UNSLOTH_GRPO = """from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained("unsloth/Qwen2.5-3B-Instruct")
trainer = GRPOTrainer(model=model, args=GRPOConfig(output_dir="o"), reward_funcs=[])
"""


def _warnings_issued(tmp_path, source: str, unsloth: str | None) -> list:
    (tmp_path / "train.py").write_text(source)
    packages = {**WARNINGS, **({"unsloth": unsloth} if unsloth else {})}
    return [
        f
        for f in findings(snapshot(1, packages=packages), launch=f"python {tmp_path / 'train.py'}")
        if f.rule == "KNF001" and f.evidence.get("id") == WARNINGS_ID
    ]


def test_unsloths_trainers_set_warnings_issued_before_trls_write(tmp_path):
    """vlm-safety-reasoning (set 15, not held out): TRL 0.23 + transformers 5.4 trained under
    Unsloth's GRPOTrainer for weeks; Unsloth's generated trainers set warnings_issued before TRL's
    write from 2026.3.1 (unslothai/unsloth#4034). A TRL script without Unsloth still fails."""
    (f,) = _warnings_issued(tmp_path, UNSLOTH_GRPO, "2026.8.1")
    assert f.severity.value == "info" and ">=2026.3.1" in f.message
    (old,) = _warnings_issued(tmp_path, UNSLOTH_GRPO, "2026.2.1")
    assert old.severity.value == "error"
    loader = 'model, tokenizer = FastLanguageModel.from_pretrained("unsloth/Qwen2.5-3B-Instruct")\n'
    plain = UNSLOTH_GRPO.replace("from unsloth import FastLanguageModel\n", "")
    plain = plain.replace(loader, "model = 'm'\n")
    (g,) = _warnings_issued(tmp_path, plain, None)
    assert g.severity.value == "error"


RANK_ID = "trl-colocate-python-launch-no-rank"
COLOCATE = NOTEBOOK.replace(
    'args = GRPOConfig(output_dir="out", per_device_train_batch_size=8, num_generations=8)',
    'args = GRPOConfig(output_dir="out", use_vllm=True, vllm_mode="colocate", num_generations=8)',
)


def _rank(tmp_path, body: str, unsloth: str | None):
    script = tmp_path / "train.py"
    script.write_text(body)
    packages = {"trl": "0.19.0", "vllm": "0.8.5", "torch": "2.6.0", "transformers": "4.52.4"}
    packages |= {"unsloth": unsloth} if unsloth else {}
    found = findings(snapshot(1, packages=packages), launch=f"python {script}")
    return [f for f in found if f.rule == "KNF001" and f.evidence.get("id") == RANK_ID]


def test_unsloths_own_vllm_engine_escapes_trls_colocate_start_without_rank(tmp_path):
    """Set 16's Unsloth notebook (TRL 0.18 colocate under plain python): Unsloth's generated trainer
    replaces TRL's LLM(..., external_launcher) start with model.vllm_engine, so RANK is never read."""
    (f,) = _rank(tmp_path, COLOCATE, "2025.5.7")
    assert f.severity.value == "info" and "imports unsloth" in f.message
    plain = COLOCATE.replace("from unsloth import FastLanguageModel\n", "")
    (g,) = _rank(tmp_path, plain, "2025.5.7")  # TRL starts vLLM itself: it still dies
    assert g.severity.value == "error"
