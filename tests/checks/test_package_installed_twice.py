"""PKG013: a package of the stack installed twice, the copy Python imports being the user site's
or a PYTHONPATH entry's, at another version than the environment's."""

from __future__ import annotations

import pytest

from tests.conftest import MODERN, findings, snapshot


def _copy(version: str, path: str, kind: str) -> dict:
    return {"version": version, "path": path, "path_kind": kind}


def _trl(version: str, kind: str, others: list[dict]) -> dict:
    path = "~/.local/lib/python3.11/site-packages" if kind == "user site" else "/work/pp"
    return {"version": version, "path": path, "path_kind": kind, "other_copies": others}


def _pkg013(trl: dict) -> list:
    return [f for f in findings(snapshot(packages={**MODERN, "trl": trl})) if f.rule == "PKG013"]


ENV = "/opt/conda/envs/rl/lib/python3.11/site-packages"


def test_a_user_site_trl_older_than_the_environments_is_a_warning():
    (f,) = _pkg013(_trl("0.14.0", "user site", [_copy("0.19.0", ENV, "environment")]))
    assert f.severity.value == "warning"  # the imported copy may be the one meant
    assert "trl 0.14.0 in ~/.local/lib/python3.11/site-packages (user site)" in f.message
    assert f"trl 0.19.0 in {ENV}" in f.message
    assert "PYTHONNOUSERSITE=1" in f.fix and "pip uninstall trl" in f.fix
    # a user copy made on purpose (pip could not write a container's site-packages): the other way
    assert "trl==0.14.0" in f.fix and "--system-site-packages" in f.fix


def test_a_pythonpath_copy_names_the_entry_to_drop():
    (f,) = _pkg013(_trl("0.12.0", "PYTHONPATH", [_copy("0.19.0", ENV, "environment")]))
    assert "PYTHONPATH" in f.message and "Drop /work/pp from PYTHONPATH" in f.fix


@pytest.mark.parametrize(
    "trl",
    [
        "0.19.0",  # one copy
        _trl("0.19.0", "user site", [_copy("0.19.0", ENV, "environment")]),  # the copies agree
        {  # the environment's copy comes first
            "version": "0.19.0",
            "path": ENV,
            "path_kind": "environment",
            "other_copies": [_copy("0.14.0", "/opt/old", "environment")],
        },
    ],
    ids=["once", "agree", "environment-first"],
)
def test_quiet(trl):
    assert _pkg013(trl) == []


def test_module_systems_pythonpath_entries_are_no_environment_to_restore():
    """EasyBuild / Lmod modules put every package on PYTHONPATH: two modules' copies at two
    versions leave no environment's copy that dropping one entry would restore."""
    other = _copy("0.19.0", "/sw/eb/software/TRL/0.19.0/lib/python3.11/site-packages", "PYTHONPATH")
    assert _pkg013(_trl("0.14.0", "PYTHONPATH", [other])) == []


def test_the_environments_copy_is_the_one_named_past_a_pythonpath_copy():
    others = [_copy("0.17.0", "/sw/pp2", "PYTHONPATH"), _copy("0.19.0", ENV, "environment")]
    (f,) = _pkg013(_trl("0.14.0", "PYTHONPATH", others))
    assert f"trl 0.19.0 in {ENV}" in f.message and "0.17.0" not in f.message
