"""A catalogue failure that is exactly a missing attribute (``when.unless_script_sets``) is
escaped by a training script that assigns the attribute itself: post-training-math (set 24)
sets ``model.warnings_issued = {}`` before building GRPOTrainer on TRL 0.24 + transformers 5.8,
and KNF001 said an error. Issue 35."""

from __future__ import annotations

import pytest
import yaml

from envdoctor.knowledge import checkable_failures
from envdoctor.knowledge.failures import KnownFailuresError, parse_file
from tests.conftest import findings, snapshot

STACK = {"trl": "0.24.0", "torch": "2.9.1", "transformers": "5.8.0"}
ID = "trl-warnings-issued-transformers-5.1"
PLAIN = """from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
{patch}trainer = GRPOTrainer(model=model, args=GRPOConfig(output_dir="o"), reward_funcs=[])
"""


def _knf(tmp_path, patch: str, helper: str | None = None) -> list:
    (tmp_path / "train.py").write_text(PLAIN.format(patch=patch))
    if helper is not None:
        (tmp_path / "compat.py").write_text(helper)
    return [
        f
        for f in findings(snapshot(1, packages=STACK), launch=f"python {tmp_path / 'train.py'}")
        if f.rule == "KNF001" and f.evidence.get("id") == ID
    ]


def test_a_script_without_the_attribute_keeps_the_error(tmp_path):
    (f,) = _knf(tmp_path, "")
    assert f.severity.value == "error"


@pytest.mark.parametrize(
    "patch",
    [
        "model.warnings_issued = {}\n",
        'setattr(model, "warnings_issued", {})\n',
        "if not hasattr(model, 'warnings_issued'):\n    model.warnings_issued = {}\n",
    ],
)
def test_a_script_that_sets_the_attribute_gets_info(tmp_path, patch):
    (f,) = _knf(tmp_path, patch)
    assert f.severity.value == "info"
    assert "sets warnings_issued itself" in f.message and "train.py:" in f.message
    assert f.fix is not None and f.fix.startswith("nothing while")


def test_a_repository_module_the_script_imports_may_set_it(tmp_path):
    """post-training-math's ``ensure_trl_model_compatibility``, in a module of its own."""
    helper = "def ensure(model):\n    model.warnings_issued = {}\n    return model\n"
    (f,) = _knf(tmp_path, "from compat import ensure\nensure(model)\n", helper)
    assert f.severity.value == "info" and "compat.py:2" in f.message


def test_another_attribute_set_escapes_nothing(tmp_path):
    (f,) = _knf(tmp_path, "model.config.use_cache = False\n")
    assert f.severity.value == "error"


def test_the_catalogue_entry_names_the_attribute():
    (entry,) = [f for f in checkable_failures() if f.id == ID]
    assert entry.unless_script_sets == ("warnings_issued",)


def test_a_malformed_condition_is_a_clear_error():
    text = (
        "schema: envdoctor.known_failures/1\nfailures:\n  - id: x\n    title: t\n    kind: crash\n"
        "    depends_on: run\n    when:\n      packages: {trl: '>=0.14'}\n"
        "      unless_script_sets: ['not an attr']\n"
        "    symptoms: ['s']\n    cause: c\n    fix: f\n    sources: ['https://github.com/a/b/pull/1']\n"
    )
    with pytest.raises(KnownFailuresError, match="unless_script_sets"):
        parse_file("x.yaml", yaml.safe_load(text))
