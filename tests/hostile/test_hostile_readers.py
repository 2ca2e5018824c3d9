"""Hostile input for the hand-written version and requirement readers (issue 37): ``===``
(arbitrary equality) and versions past Python's int-string limit. Each CLI run is a new process
under the address-space limit and wall-clock guard of test_hostile_inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement as PackagingRequirement
from packaging.specifiers import SpecifierSet

from envdoctor import pep508, versions
from tests.conftest import ROOT, snapshot
from tests.hostile.test_hostile_inputs import GUARD_S, _limits, cli

#: past ``sys.get_int_max_str_digits()`` (4,300): ``int()`` of it raises ValueError
HUGE = "1" * 5000


@pytest.mark.parametrize(
    "version, specifier",
    [
        ("01.15.0", "===01.15.0"),  # no normalisation: the strings are equal
        ("1.15.0", "===01.15.0"),
        ("2.6.0+cu124", "===2.6.0"),  # no local label dropped
        ("2.6.0", "===2.6.0"),
        ("2.6.0+cu124", "===2.6.0,>=1"),
        ("2.6.0+cu124", "===2.6.0+cu124"),
        ("2.6.0+CU124", "===2.6.0+cu124"),  # packaging compares without case
        ("1.0", "===1.0.0"),
    ],
)
def test_arbitrary_equality_is_packagings(version, specifier):
    want = SpecifierSet(specifier).contains(version, prereleases=True)
    assert versions.satisfies(version, specifier) is want
    assert versions.contains(specifier, version) is want


def test_a_version_past_the_int_string_limit_is_not_a_version_nor_a_crash():
    assert versions.parse(HUGE) is None
    assert versions.parse(HUGE + ".0") is None
    assert versions.parse("1." + HUGE + "rc1") is None
    for version, specifier in ((HUGE, ">=1.0"), ("1.0", ">=" + HUGE), ("1.0", "==1.*," + "<" + HUGE)):
        assert versions.satisfies(version, specifier) is None
        assert versions.contains(specifier, version) is None
    assert versions.spec_error(">=" + HUGE) is False  # packaging reads it as a specifier
    assert versions.at_least(HUGE, "1.0") is None


@pytest.mark.parametrize(
    "line",
    [
        "accelerate>=" + HUGE,
        "accelerate>=1.0,<" + HUGE,
        "accelerate==" + HUGE + ".*",
        f'accelerate>=1.0; python_version >= "{HUGE}"',
    ],
)
def test_a_requirement_past_the_int_string_limit_parses_as_packaging_parses_it(line):
    want = PackagingRequirement(line)
    try:
        str(want.specifier)
    except ValueError:  # packaging sorts a set by its versions: it cannot, nor can a rule
        with pytest.raises(pep508.InvalidRequirement, match="4,300 digits"):
            pep508.parse(line)
        return
    got = pep508.parse(line)
    assert (got.name, got.specifier) == (want.name, str(want.specifier))
    assert str(got.marker) == (str(want.marker) if want.marker else "None")


def _site(tmp_path: Path, versions_of: dict[str, str], requires: dict[str, list[str]]) -> Path:
    """A folder of ``*.dist-info`` for the stack, first on ``sys.path`` (PYTHONPATH)."""
    site = tmp_path / "site"
    for name, version in versions_of.items():
        info = site / f"{name}-0.dist-info"
        info.mkdir(parents=True)
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        lines += [f"Requires-Dist: {r}" for r in requires.get(name, [])]
        (info / "METADATA").write_text("\n".join(lines) + "\n\n")
    return site


def _check_live(tmp_path: Path, site: Path) -> subprocess.CompletedProcess:
    """``check`` of the live environment with ``site`` first on ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_", "HF_"))}
    env.update(NO_COLOR="1", PYTHONPATH=f"{ROOT}:{site}")
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", "check", "--no-network"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=GUARD_S,
        preexec_fn=_limits,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


STACK = {"trl": "1.16.0", "transformers": "5.23.0", "torch": "2.13.0", "accelerate": "1.15.0"}


def test_arbitrary_equality_in_requires_dist_of_an_installed_stack(tmp_path):
    site = _site(tmp_path, {**STACK, "accelerate": "01.15.0"}, {"trl": ["accelerate===01.15.0"]})
    proc = _check_live(tmp_path, site)
    assert "PKG004" not in proc.stdout, proc.stdout


def test_arbitrary_equality_against_a_local_build_in_a_snapshot(tmp_path):
    snap = snapshot(2)
    snap["packages"]["trl"]["requires"] = ["torch===2.13.0"]  # torch is 2.13.0+cu128
    (tmp_path / "s.json").write_text(json.dumps(snap))
    proc = cli(tmp_path, "check", "--facts", "s.json")
    assert "PKG004" in proc.stdout, proc.stdout  # pip: not satisfied
    snap["packages"]["trl"]["requires"] = ["torch===2.13.0+cu128"]
    (tmp_path / "s.json").write_text(json.dumps(snap))
    proc = cli(tmp_path, "check", "--facts", "s.json")
    assert "PKG004" not in proc.stdout, proc.stdout


@pytest.mark.parametrize("where", ["version", "requires"])
def test_a_5000_digit_version_installed_is_a_finding(tmp_path, where):
    if where == "version":
        site = _site(tmp_path, {**STACK, "accelerate": HUGE}, {})
    else:
        site = _site(tmp_path, STACK, {"trl": ["accelerate>=" + HUGE, "torch<" + HUGE]})
    proc = _check_live(tmp_path, site)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "failed internally" not in proc.stdout, proc.stdout
    if where == "version":
        assert "PKG005" in proc.stdout, proc.stdout
