# ruff: noqa: E501 - log lines are quoted as programs print them
"""A NameError on a name one package of the stack defines in some releases only, raised where code
binds it from that package's import, resolves it from a string annotation, or runs code compiled
from another package's source: TRI009's API drift from the symbol history
(envdoctor/triage/namedrift.py). Each shape fires; the user's own names, a name two packages
define, a name every release has and a log whose release has the name stay quiet."""

from __future__ import annotations

from pathlib import Path

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]
SET24 = ROOT / "docs/validation/heldout-2026-11-30g/logs24a/logs/009.log"
SET16 = ROOT / "docs/validation/heldout-2026-11-29h/logs16c/logs/001.log"

RESOLUTION = """RuntimeError: Type resolution failed for <class 'trl.trainer.dpo_config.DPOConfig'>. Try declaring the class in global scope or removing line of `from __future__ import annotations` which opts in Postponed Evaluation of Annotations (PEP 563)
E           NameError: name '{name}' is not defined
"""
FRAME = """Traceback (most recent call last):
  File "{path}", line 212, in {func}
    x = {name}(cfg)
NameError: name '{name}' is not defined
"""
SITE = "/usr/local/lib/python3.11/site-packages"


def _tri009(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def test_hfargumentparser_type_resolution_is_accelerates_release() -> None:
    (f,) = _tri009(RESOLUTION.format(name="ParallelismConfig"))
    assert f.severity == Severity.WARNING
    assert "API drift between transformers and accelerate" in f.message
    assert "added in accelerate 1.10.0" in f.message and "transformers.training_args" in f.message
    assert f.fix.startswith("pip install --upgrade 'accelerate>=1.10.0'")


def test_the_logs_release_that_lacks_it_makes_it_an_error() -> None:
    (f,) = _tri009("accelerate==1.8.1\n" + RESOLUTION.format(name="ParallelismConfig"))
    assert f.severity == Severity.ERROR and "the log's accelerate 1.8.1 lacks it" in f.message


def test_quiet_where_the_logs_release_has_the_name() -> None:
    assert not _tri009("accelerate==1.11.0\n" + RESOLUTION.format(name="ParallelismConfig"))


def test_the_real_set_24_log_gets_drift_not_the_first_exception() -> None:
    (f,) = _tri009(SET24.read_text())
    assert "accelerate" in f.message and "'accelerate>=1.10.0'" in f.fix


def test_a_compiled_modules_frame() -> None:
    (f,) = _tri009(FRAME.format(path="<string>", func="_fast_inner_training_loop", name="ParallelismConfig"))
    assert "the generated code and accelerate" in f.message and "<string>:212" in f.message
    assert f.fix.startswith("pip install --upgrade 'accelerate>=1.10.0'")


def test_a_removed_name_in_a_compiled_module_pins_below_its_removal() -> None:
    path = "/home/u/unsloth_compiled_cache/UnslothGFPOTrainer.py"
    (f,) = _tri009("trl==1.9.0\n" + FRAME.format(path=path, func="__init__", name="GFPOTrainer"))
    assert f.severity == Severity.ERROR and "removed in trl 1.8.0" in f.message
    assert f.fix.startswith("pip install 'trl>=0.24.0,<1.8.0'")


def test_a_packages_frame_that_binds_the_name_from_its_import() -> None:
    path = f"{SITE}/transformers/training_args.py"
    (f,) = _tri009(FRAME.format(path=path, func="__post_init__", name="ParallelismConfig"))
    assert (
        "API drift between transformers and accelerate" in f.message and "training_args.py:212" in f.message
    )
    assert "install the transformers release made for the installed accelerate" in f.fix


def test_quiet_for_a_packages_frame_whose_module_never_binds_it() -> None:
    """transformers' trainer.py does not bind ParallelismConfig: its own missing import (TRI014)."""
    path = f"{SITE}/transformers/trainer.py"
    text = FRAME.format(path=path, func="train", name="ParallelismConfig")
    assert not _tri009(text)
    assert any(f.rule == "TRI014" for f in findings(scan_bytes(text)))


def test_quiet_for_the_users_code_and_the_packages_own_frame() -> None:
    user = FRAME.format(path="/home/u/train.py", func="main", name="ParallelismConfig")
    assert not _tri009(user)  # a guarded import of the user's: TRI013
    own = FRAME.format(path=f"{SITE}/accelerate/accelerator.py", func="prepare", name="ParallelismConfig")
    assert not _tri009(own)


def test_quiet_for_a_name_two_packages_define_or_every_release_has() -> None:
    for name in ("ChatArguments", "FP8BackendType", "train_dataset", "psutil"):
        assert not _tri009(FRAME.format(path="<string>", func="loop", name=name)), name
        assert not _tri009(RESOLUTION.format(name=name)), name


def test_the_real_set_16_log_stays_quiet() -> None:
    """FP8BackendType: every accelerate release read defines it (accelerate.utils.dataclasses), so no
    release lacks it; Unsloth re-running accelerate's code in its own namespace is not drift."""
    assert not _tri009(SET16.read_text())


def test_hostile_lines_stay_bounded() -> None:
    text = (
        "RuntimeError: Type resolution failed for <class '"
        + "a." * 5000
        + "X'>\n"
        + "E NameError: name '"
        + "x" * 300
        + "' is not defined\n"
    )
    assert not _tri009(text)
