"""Where a distribution was installed from when not from a package index (PEP 610
``direct_url.json``: a git URL and commit, a local tree) is a fact of the package: a TRL built from
a fork is not TRL's release of that number (CFG002 reads it). Collected, and kept through a
snapshot. Issue 35."""

from __future__ import annotations

import json

from envdoctor.facts.packages import read_origin
from envdoctor.facts.snapshot import from_dict, to_dict
from tests.conftest import snapshot


def _dist(tmp_path, direct_url: object | None):
    folder = tmp_path / "trl-0.15.0.dev0.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text("Metadata-Version: 2.1\nName: trl\nVersion: 0.15.0.dev0\n")
    if direct_url is not None:
        (folder / "direct_url.json").write_text(json.dumps(direct_url))
    return folder


def test_a_vcs_install_names_its_url_and_commit(tmp_path):
    folder = _dist(
        tmp_path,
        {"url": "https://github.com/andyl98/trl.git", "vcs_info": {"vcs": "git", "commit_id": "ccc9547"}},
    )
    assert read_origin(folder) == "git+https://github.com/andyl98/trl.git@ccc9547"


def test_a_local_tree_and_an_index_install(tmp_path):
    assert read_origin(_dist(tmp_path / "a", {"url": "file:///w/trl_custom", "dir_info": {}})) == (
        "file:///w/trl_custom"
    )
    assert read_origin(_dist(tmp_path / "b", None)) is None
    wheel = {"url": "https://files.example/trl-0.15.0-py3-none-any.whl", "archive_info": {}}
    assert read_origin(_dist(tmp_path / "c", wheel)) is None


def test_broken_direct_url_is_no_origin(tmp_path):
    folder = _dist(tmp_path, None)
    (folder / "direct_url.json").write_text("{not json")
    assert read_origin(folder) is None
    (folder / "direct_url.json").write_text(json.dumps(["a list"]))
    assert read_origin(folder) is None


def test_the_origin_survives_a_snapshot():
    snap = snapshot(
        1, packages={"trl": {"version": "0.15.0.dev0", "origin": "file:///w/trl"}, "torch": "2.5.1"}
    )
    facts = from_dict(snap, "s.json")
    assert facts.packages["trl"].origin == "file:///w/trl" and facts.packages["torch"].origin is None
    again = to_dict(facts)["packages"]
    assert again["trl"]["origin"] == "file:///w/trl" and "origin" not in again["torch"]
