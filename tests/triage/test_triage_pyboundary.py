# ruff: noqa: E501 - log lines are quoted as programs print them
"""A standard-library name newer than the run's Python (pyboundary.py, TRI029): an error where the
log shows an older Python, a warning where it shows none, quiet where the Python shown has the name,
where the module is a package's backport, or where the object is the user's. Synthetic texts in the
grammar Python prints (the first: set 23's f009)."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _rules(text: str) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in findings(scan_bytes(text))]


def _one(text: str):
    (f,) = [f for f in findings(scan_bytes(text)) if f.rule == "TRI029"]
    return f


UNPACK = """\
File "/project/Logic-RL-main/verl/models/transformers/llama.py", line 17, in <module>
from typing import Optional, List, Union, Tuple, Unpack, Callable
ImportError: cannot import name 'Unpack' from 'typing' (/opt/miniconda3/envs/verl/lib/python3.{minor}/typing.py)
"""

TOMLLIB = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    import mypkg
  File "/home/u/.venv/lib/python3.10/site-packages/mypkg/config.py", line 2, in <module>
    import tomllib
ModuleNotFoundError: No module named 'tomllib'
"""

FUNCTOOLS = """\
Traceback (most recent call last):
  File "/usr/lib/python3.8/site-packages/mypkg/utils.py", line 9, in <module>
    @functools.cache
AttributeError: module 'functools' has no attribute 'cache'
"""

SLOTS = """\
Traceback (most recent call last):
  File "/home/u/.venv/lib/python3.9/site-packages/mypkg/config.py", line 20, in <module>
    @dataclass(slots=True)
TypeError: dataclass() got an unexpected keyword argument 'slots'
"""

ZIP = """\
Traceback (most recent call last):
  File "/home/u/.venv/lib/python3.9/site-packages/mypkg/x.py", line 20, in f
    for a, b in zip(xs, ys, strict=True):
TypeError: zip() takes no keyword arguments
"""


def test_typing_unpack_on_python_39_is_the_interpreter() -> None:
    f = _one(UNPACK.format(minor=9))
    assert f.severity == Severity.ERROR
    assert "typing.Unpack" in f.message and "Python 3.11" in f.message and "Python 3.9" in f.message
    assert "Python 3.11 or later" in f.fix and "typing_extensions" in f.fix


def test_the_same_import_error_on_a_python_that_has_the_name_is_another_cause() -> None:
    assert not any(r == "TRI029" for r, _ in _rules(UNPACK.format(minor=11)))


def test_a_packages_backport_of_the_module_is_not_the_standard_library() -> None:
    text = UNPACK.format(minor=9).replace(
        "/opt/miniconda3/envs/verl/lib/python3.9/typing.py", "/opt/env/lib/python3.9/site-packages/typing.py"
    )
    assert not any(r == "TRI029" for r, _ in _rules(text))


def test_no_python_shown_is_a_warning() -> None:
    text = "ImportError: cannot import name 'Unpack' from 'typing'\n"
    assert _one(text).severity == Severity.WARNING


def test_a_module_newer_than_the_python_shown() -> None:
    f = _one(TOMLLIB)
    assert f.severity == Severity.ERROR and "tomllib" in f.message and "3.11" in f.fix
    assert not any(r == "TRI029" for r, _ in _rules(TOMLLIB.replace("python3.10", "python3.11")))


def test_a_stdlib_attribute_newer_than_the_python_shown() -> None:
    f = _one(FUNCTOOLS)
    assert f.severity == Severity.ERROR and "functools.cache" in f.message


def test_an_attribute_error_on_a_users_object_stays_quiet() -> None:
    text = FUNCTOOLS.replace(
        "module 'functools' has no attribute 'cache'", "'Trainer' object has no attribute 'cache'"
    )
    assert not any(r == "TRI029" for r, _ in _rules(text))
    text = FUNCTOOLS.replace(
        "module 'functools' has no attribute 'cache'", "module 'mypkg' has no attribute 'cache'"
    )
    assert not any(r == "TRI029" for r, _ in _rules(text))


def test_a_keyword_newer_than_the_python_shown() -> None:
    assert _one(SLOTS).severity == Severity.ERROR
    assert "slots" in _one(SLOTS).message
    f = _one(ZIP)
    assert f.severity == Severity.ERROR and "strict" in f.message and "3.10" in f.fix


def test_a_keyword_the_python_shown_has_is_another_cause() -> None:
    assert not any(r == "TRI029" for r, _ in _rules(SLOTS.replace("python3.9", "python3.10")))
    text = ZIP.replace("strict=True", "fillvalue=0")  # not a keyword of a later zip: not the boundary
    assert not any(r == "TRI029" for r, _ in _rules(text))


def test_a_cpython_extension_name_tells_the_python() -> None:
    text = (
        "building /x/build/lib.linux-x86_64-cpython-39/flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so\n"
        + "ImportError: cannot import name 'Unpack' from 'typing'\n"
    )
    assert _one(text).severity == Severity.ERROR
