"""``envdoctor.pep508`` reads the common ``Requires-Dist`` shapes without packaging (issue 29: its
import was a seventh of a static check). Held to packaging itself: on every ``Requires-Dist`` line
of the installed environment and on odd shapes, the same name, extras, specifier text, URL, the
same verdict of every marker in many environments, and the same lines refused."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import default_environment as packaging_default_environment
from packaging.requirements import InvalidRequirement, Requirement

from envdoctor import pep508
from envdoctor.facts.packages import requirement_problem

#: a number past Python's int-string limit (4,300 digits): packaging's int() raises on it
HUGE = "1" * 4301

#: Environments the markers are evaluated in (over this interpreter's), with each extra below.
ENVS: list[dict[str, str]] = [
    {},
    {"python_version": "3.8", "python_full_version": "3.8.10"},
    {"python_version": "3.10", "python_full_version": "3.10.0rc1"},
    {"python_version": "3.12", "python_full_version": "3.12.3"},
    {"python_version": "3.14", "python_full_version": "3.14.0a1+"},
    {"python_version": "3.11", "python_full_version": "not-a-version"},
    {"sys_platform": "win32", "os_name": "nt", "platform_system": "Windows", "platform_machine": "AMD64"},
    {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
    {"platform_machine": "aarch64", "platform_python_implementation": "PyPy", "implementation_name": "pypy"},
]
EXTRAS = ("", "vllm", "dev", "Tests_Numpy2", "tests-numpy2", "test", "all", "torch")

ODD = [
    "a",
    "A.b_c-d",
    "a>=1",
    "a >= 1.0 , < 2",
    "a<2,>=1.0",
    "a>=1.0,>=1.0.0",
    "a>=1.0.0,>=1.0",
    "a==1.0,==1",
    "a~=1.0,~=1.0.0",
    "a!=1.0.*,!=1.0.0",
    "a==01.02",
    "a>=1.0rc01.post02.dev03",
    "a[b]",
    "a[ b , c ]>=1",
    "a [b]",
    "a[]",
    "a>=1 ; python_version < '3.12'",
    'a; python_version >= "3.10" and sys_platform != "win32"',
    'a; (python_version >= "3.11" and sys_platform != "win32") and extra == "dev"',
    'a; python_version<"3.8"or(os_name=="nt"and extra=="x")',
    'a; "linux" == sys_platform',
    'a; "3.10" < python_version',
    'a; python_version == "3.11.*"',
    'a; python_version != "3.*"',
    'a; python_full_version >= "3.11.0rc1"',
    'a; python_version > "3"',
    'a; python_version ~= "3.10"',
    'a; python_version === "3.11"',
    'a; python_version > "3.x"',
    'a; sys_platform < "linux"',
    'a; platform_machine in "x86_64 aarch64"',
    'a; "x" in extra',
    'a; platform_release >= "5.4"',
    'a; os.name == "posix"',
    'a; extra == "Tests_Numpy2"',
    'a; extra != "dev"',
    'a; extra == ""',
    'a; python_version == ""',
    'a; ((python_version > "3.8"))',
    'a; python_version > "3.8" and',
    'a; (python_version > "3.8"',
    'a; python_version > "3.8")',
    "a;",
    "a; ",
    'a;python_version>"3"',
    'a ; python_version > "3.8"  ',
    "a @ https://example.org/a-1.0.tar.gz",
    'a @ https://example.org/a.whl ; python_version > "3"',
    "a>=1.0+local",
    "a==1.0+local",
    "a>=v1.0",
    "a>=1!2.0",
    "a===1.0",
    "a>=1.0-1",
    "a>=1.0.*",
    "a~=1",
    "a(>=1.0)",
    "a (>=1.0,<2)",
    "a ( >= 1.0 , < 2 ) ; python_version < '3.12'",
    'triton (==2.1.0) ; platform_system == "Linux" and platform_machine == "x86_64"',
    "a ()",
    "a (>=1.0",
    "a >=1.0)",
    "a[x] (>=1)",
    "a>=1 extra",
    "a>=",
    ">=1",
    "-a",
    "a.",
    "a b",
    "a;python_version>'3'\n",
]


def _installed_lines() -> list[str]:
    """Every ``Requires-Dist`` line of every distribution on ``sys.path``."""
    lines: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for item in names:
            if not item.endswith(".dist-info"):
                continue
            try:
                text = (Path(entry or ".") / item / "METADATA").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.split("\n\n", 1)[0].splitlines():
                if line.startswith("Requires-Dist:"):
                    lines.add(line[14:].strip())
    return sorted(lines)


def _outcome(call):
    try:
        return call()
    except Exception as exc:
        return type(exc).__name__


def _agrees(line: str) -> None:
    try:
        want = Requirement(line)
    except InvalidRequirement as exc:
        with pytest.raises(pep508.InvalidRequirement) as got:
            pep508.parse(line)
        assert str(got.value) == str(exc)
        return
    try:
        str(want.specifier)
    except ValueError:  # a number past the int-string limit: packaging cannot sort the set
        with pytest.raises(pep508.InvalidRequirement):
            pep508.parse(line)
        return
    req = pep508.parse(line)
    assert (req.name, set(req.extras), req.specifier, req.url) == (
        want.name,
        want.extras,
        str(want.specifier),
        want.url,
    ), line
    assert (req.marker is None) == (want.marker is None), line
    if want.marker is None or req.marker is None:
        return
    assert ("extra" in str(req.marker)) == ("extra" in str(want.marker)), line
    for env in ENVS:
        for extra in EXTRAS:
            full = {**env, "extra": extra}
            ours = _outcome(lambda: req.marker.evaluate(full))  # noqa: B023
            theirs = _outcome(lambda: want.marker.evaluate(full))  # noqa: B023
            assert ours == theirs, (line, full)


def test_every_installed_requirement_line_reads_as_packaging_reads_it():
    lines = _installed_lines()
    if len(lines) < 100:
        pytest.skip("too few installed Requires-Dist lines to compare (no training stack here)")
    fast = [line for line in lines if isinstance(pep508.parse(line).marker, pep508.Marker)]
    assert fast  # markers of the subset are read here, not by packaging
    for line in lines:
        _agrees(line)


@pytest.mark.parametrize("line", ODD)
def test_odd_shapes_read_as_packaging_reads_them(line):
    _agrees(line)


def test_the_common_shapes_need_no_packaging():
    for line in (
        "huggingface-hub<3.0,>=1.31.0",
        'triton (==2.1.0) ; platform_system == "Linux" and platform_machine == "x86_64"',
        'tomli>=1.1.0; python_version < "3.11"',
        'hf-xet<2.0.0,>=1.6.0; platform_machine == "x86_64" or platform_machine == "AMD64"',
        'tensorflow>=2.16.0; (python_version >= "3.10" and sys_platform != "win32") and extra == "dev"',
    ):
        assert pep508._head(line.partition(";")[0]) is not None, line
        req = pep508.parse(line)
        assert req.marker is None or isinstance(req.marker, pep508.Marker), line


def test_default_environment_is_packagings():
    assert pep508.default_environment() == packaging_default_environment()


_ATOMS = st.sampled_from(
    [
        'python_version < "3.11"',
        'python_version >= "3.12"',
        'python_full_version == "3.11.*"',
        'python_full_version != "3.11.7"',
        'sys_platform == "linux"',
        '"win32" != sys_platform',
        'platform_machine == "x86_64"',
        'extra == "dev"',
        'extra != "Tests_numpy2"',
        'os_name == "nt"',
        'python_full_version === "3.11.9"',
        f'python_version >= "{HUGE}"',
    ]
)


@st.composite
def _markers(draw, depth: int = 0) -> str:
    if depth > 2 or draw(st.booleans()):
        return draw(_ATOMS)
    parts = draw(st.lists(_markers(depth + 1), min_size=2, max_size=3))
    joined = f" {draw(st.sampled_from(['and', 'or']))} ".join(parts)
    return f"({joined})" if draw(st.booleans()) else joined


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(["a", "A_b.c"]),
    specs=st.lists(
        st.sampled_from(
            [">=1.0", "<2", "==1.0.*", "!=1.5", "~=1.2.0", ">1.0rc1", "<=3.0.post1", ">=1"]
            + ["===01.15.0", "===2.6.0+cu124", ">=" + HUGE, "==1." + HUGE + ".*"]
        ),
        max_size=3,
    ),
    marker=st.one_of(st.none(), _markers()),
)
def test_generated_lines_read_as_packaging_reads_them(name, specs, marker):
    line = name + ",".join(specs) + (f"; {marker}" if marker else "")
    _agrees(line)
    if len(line) <= 1000:  # longer ones are refused by length before any parse
        assert requirement_problem(line) is None
