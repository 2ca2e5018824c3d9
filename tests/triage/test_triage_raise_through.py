"""A raise an attribute hook makes for its caller (envdoctor/triage/raisethrough.py): the frame that
read, set or deleted the name is the raise's site for TRI003's "raised in", the fix history and the
line history; the line history (scripts/derive_line_history.py) keeps a ``del`` of a name and
a guard added around a read (``hasattr`` / ``getattr(x, name, default)`` / ``"name" in``)."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.triage.linehist import drift_names
from envdoctor.triage.traceback import failure
from tests.triage.helpers import findings, scan_bytes, script

ROOT = Path(__file__).resolve().parents[2]
SET22 = ROOT / "docs" / "validation" / "heldout-2026-11-30e"
SITE = "/venv/lib/python3.10/site-packages"

DELATTR = f"""\
Traceback (most recent call last):
  File "/home/u/train.py", line 192, in <module>
    trainer = SFTTrainer(model=model)
  File "{SITE}/unsloth/models/llama.py", line 2737, in for_training
    del model._some_cached_generate
  File "{SITE}/torch/nn/modules/module.py", line 2040, in __delattr__
    super().__delattr__(name)
AttributeError: _some_cached_generate
"""
# PEFT's forwarding hooks, then torch's: the compiled trainer's read is the site
FORWARDED = f"""\
Traceback (most recent call last):
  File "/home/u/train.py", line 21, in <module>
    trainer = GRPOTrainer(model=model)
  File "/home/u/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 1438, in __init__
    self.llm = model.some_engine
  File "{SITE}/peft/peft_model.py", line 797, in __getattr__
    return getattr(self.base_model, name)
  File "{SITE}/peft/tuners/lora/model.py", line 363, in __getattr__
    return getattr(self.model, name)
  File "{SITE}/torch/nn/modules/module.py", line 1928, in __getattr__
    raise AttributeError(
AttributeError: 'Qwen3ForCausalLM' object has no attribute 'some_engine'
"""


def _tb(text: str):  # type: ignore[no-untyped-def]
    lines = text.splitlines()
    tb = failure(lines[:-1], lines[-1])
    assert tb is not None
    return tb


def test_an_attribute_hooks_raise_is_its_callers() -> None:
    tb = _tb(DELATTR)
    assert tb.call_site == 1 and tb.through is not None and tb.through.function == "__delattr__"
    assert tb.shown_frames()[-1].package == "unsloth" and tb.shown_frames()[-1].function == "for_training"
    tb = _tb(FORWARDED)
    assert tb.call_site == 1 and tb.shown_frames()[-1].package is None  # the compiled trainer's line
    assert tb.through is not None and tb.through.package == "torch"
    # an import's name a lazy module refuses: Python's import machinery is not the asker
    lazy = DELATTR.replace(
        f'  File "{SITE}/torch/nn/modules/module.py", line 2040, in __delattr__\n',
        '  File "<frozen importlib._bootstrap>", line 1075, in _handle_fromlist\n'
        f'  File "{SITE}/torch/nn/modules/module.py", line 2040, in __delattr__\n',
    )
    assert _tb(lazy).call_site == 1 and _tb(lazy).shown_frames()[-1].function == "for_training"


def test_not_handed_on_where_the_hook_is_not_the_innermost_a_package_hook_or_the_exception_another() -> None:
    # the user's own class's hook: the user's class is the place
    own = DELATTR.replace(f"{SITE}/torch/nn/modules/module.py", "/home/u/mymodel.py")
    assert _tb(own).through is None and _tb(own).call_site == -1
    # another exception out of a hook (a lazy import that failed): raised where it was
    other = DELATTR.replace("AttributeError: _some_cached_generate", "RuntimeError: CUDA error")
    assert _tb(other).through is None
    # the hook called on (triton's driver initialising itself): its own work failed
    working = DELATTR.replace(
        "    super().__delattr__(name)\n",
        f'    super().__delattr__(name)\n  File "{SITE}/torch/nn/modules/module.py", line 9, in _init\n'
        "    self._setup()\n",
    )
    assert _tb(working).through is None
    # hooks only, no caller shown
    bare = "Traceback (most recent call last):\n" + "\n".join(DELATTR.splitlines()[5:])
    assert _tb(bare).through is None


def test_raised_in_names_the_caller_and_the_hook() -> None:
    (f,) = [x for x in findings(scan_bytes(DELATTR)) if x.rule == "TRI003"]
    assert "raised in unsloth (unsloth/models/llama.py:2737 in for_training)" in f.message
    assert "through torch's __delattr__ (nn/modules/module.py:2040)" in f.message
    # a raise of the package's own (not through a hook) stays where it was
    own = DELATTR.replace("in __delattr__", "in _apply")
    (f,) = [x for x in findings(scan_bytes(own)) if x.rule == "TRI003"]
    assert "raised in torch (torch/nn/modules/module.py:2040 in _apply)" in f.message


def test_raised_in_names_unsloths_generated_trainer_as_the_caller() -> None:
    (f,) = [x for x in findings(scan_bytes(FORWARDED)) if x.rule == "TRI003"]
    assert "raised in Unsloth's generated trainer (UnslothGRPOTrainer.py:1438 in __init__)" in f.message
    assert "through torch's __getattr__" in f.message


def test_drift_names_reads_the_bare_name_of_a_handed_on_raise() -> None:
    assert drift_names(_tb(DELATTR)) == ("a:_some_cached_generate",)
    # a bare name not raised through a hook is no attribute's name
    lines = ["Traceback (most recent call last):", '  File "/home/u/x.py", line 1, in f', "    g()"]
    tb = failure(lines, "AttributeError: something")
    assert tb is not None and drift_names(tb) == ()


@pytest.mark.parametrize("half", ["logs22b", "logs22d"])
def test_set22_unsloth_for_training_names_the_release_that_dropped_the_delete(half: str) -> None:
    """Unsloth 2025.2.12's for_training deletes ``model._unwrapped_old_generate`` (torch's
    ``__delattr__`` raises for it); unslothai/unsloth's _wrap_fast_inference commit (2025.3.5)
    removed the delete with every use of the name from for_training."""
    log = (SET22 / half / "logs" / "001.log").read_text()
    (f,) = [x for x in findings(scan_bytes(log)) if x.rule == "TRI014"]
    assert f.severity == Severity.ERROR
    assert f.fix.startswith("pip install 'unsloth>=2025.3.5'")
    assert "removed the very line" in f.message and "unsloth 2025.2.12, older than 2025.3.5" in f.message


# -- the derive script: ``del x.name`` and a guard added around a read --------------------------


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return script("derive_line_history")


def _refs(derive: ModuleType, src: str, fn: str = "f") -> set[tuple[str, str]]:
    return {(k, n) for k, n, *_ in derive.refs(derive.scopes(ast.parse(textwrap.dedent(src)))[fn])}


def test_a_delete_of_an_attribute_is_a_reference(derive: ModuleType) -> None:
    assert ("a", "cached_gen") in _refs(derive, "def f(m):\n    del m.cached_gen\n")
    assert ("a", "cached_gen") not in _refs(derive, "def f(m):\n    m.cached_gen = 1\n")  # a store


def test_tested_reads(derive: ModuleType) -> None:
    src = textwrap.dedent(
        """\
        def f(m, d):
            if hasattr(m, "alpha_x"):
                y = m.alpha_x
            z = getattr(m, "beta_x", None) and m.beta_x
            if "gamma_x" in m.__dict__:
                del m.gamma_x
            w = m.delta_x
        """
    )
    nodes = derive.scopes(ast.parse(src))["f"]
    assert {n for n, _ in derive.tested(nodes)} == {"alpha_x", "beta_x", "gamma_x"}


GUARD_OLD = """
    def for_training(model):
        model.training_flag = True
        model.generate = model.saved_generate_x
        del model.saved_generate_x
        return model


    def other(model):
        if hasattr(model, "cache_x"):
            return model.cache_x.numel
        return 0
"""
# the read wrapped in a test for its name; the guarded read of ``other`` reworded under the same test
GUARD_NEW = """
    def for_training(model):
        model.training_flag = True
        if hasattr(model, "saved_generate_x"):
            model.generate = model.saved_generate_x
            delattr(model, "saved_generate_x")
        return model


    def other(model):
        if hasattr(model, "cache_x"):
            return int(model.cache_x.numel)
        return 0
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_guard_added_around_a_read_is_the_change_a_reworded_guarded_read_is_not(
    derive: ModuleType, tmp_path: Path
) -> None:
    from tests.triage.test_triage_line_history import _commit, _git

    path = "src/accelerate/utils/guard.py"
    _git(tmp_path, "init", "-q", "-b", "main")
    _commit(tmp_path, {"src/accelerate/__init__.py": "", path: GUARD_OLD}, "Initial import")
    _git(tmp_path, "tag", "v0.1.0")
    _commit(tmp_path, {path: GUARD_NEW}, "Only restore generate when it was saved (#41)")
    _git(tmp_path, "tag", "v0.2.0")
    history = derive.derive(
        tmp_path / ".git", "accelerate", ("src/accelerate",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "a/b"
    )
    rows = history["functions"]["utils/guard.py"]
    assert set(rows) == {"for_training"}  # not ``other``: its read was under the test before too
    lines = {r[1]: r[2:] for r in rows["for_training"]}
    h = derive.fh.line_hash
    assert lines[h("del model.saved_generate_x")] == ["a:saved_generate_x"]
    assert lines[h("model.generate = model.saved_generate_x")] == ["a:saved_generate_x"]
    assert [c[2] for c in history["commits"]] == ["0.2.0"]
