"""A distribution installed in two sys.path entries (the user site and the environment's, a
PYTHONPATH entry): facts record which copy Python imports and the others (``Package.other_copies``),
and snapshots keep them. Site folders are built in tmp_path: no test reads the real ~/.local."""

from __future__ import annotations

import json
import site
import sys
from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.facts import packages as pk
from envdoctor.facts.snapshot import dumps, from_dict
from tests.conftest import MODERN, snapshot


def _install(entry: Path, dist: str, version: str, package: bool = True) -> None:
    info = entry / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\n")
    if package:
        (entry / dist.replace("-", "_")).mkdir()
        (entry / dist.replace("-", "_") / "__init__.py").write_text("")


@pytest.fixture
def sites(tmp_path, monkeypatch):
    user, env, extra = tmp_path / "user", tmp_path / "env", tmp_path / "pp"
    for d in (user, env, extra):
        d.mkdir()
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True, raising=False)
    monkeypatch.setattr(site, "USER_SITE", str(user), raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return user, env, extra


def _collect(monkeypatch, path: list[Path]) -> dict:
    monkeypatch.setattr(sys, "path", [str(p) for p in path])
    monkeypatch.setattr(
        sys, "meta_path", [m for m in sys.meta_path if type(m).__name__ == "PathFinder"] or sys.meta_path
    )
    return pk.collect_packages(("trl",))


def test_a_user_site_copy_before_the_environments_is_recorded(sites, monkeypatch):
    user, env, _ = sites
    _install(user, "trl", "0.14.0")
    _install(env, "trl", "0.19.0")
    trl = _collect(monkeypatch, [user, env])["trl"]
    assert trl.version == "0.14.0"  # what import gets: the first on sys.path
    assert trl.path == str(user) and trl.path_kind == "user site"
    assert [(c.version, c.path, c.path_kind) for c in trl.other_copies] == [
        ("0.19.0", str(env), "environment")
    ]


def test_with_the_user_site_off_only_the_environments_copy_is_seen(sites, monkeypatch):
    user, env, _ = sites
    _install(user, "trl", "0.14.0")
    _install(env, "trl", "0.19.0")
    trl = _collect(monkeypatch, [env])["trl"]  # PYTHONNOUSERSITE / -s / a venv: not on sys.path
    assert trl.version == "0.19.0" and not trl.other_copies and trl.path is None


def test_a_pythonpath_entry_is_named(sites, monkeypatch):
    _, env, extra = sites
    _install(extra, "trl", "0.12.0")
    _install(env, "trl", "0.19.0")
    monkeypatch.setenv("PYTHONPATH", str(extra))
    trl = _collect(monkeypatch, [extra, env])["trl"]
    assert trl.path_kind == "PYTHONPATH" and trl.other_copies[0].version == "0.19.0"


@pytest.mark.parametrize("where", ["first", "second"])
def test_metadata_left_without_its_package_is_no_copy(sites, monkeypatch, where):
    user, env, _ = sites
    _install(user, "trl", "0.14.0", package=where != "first")
    _install(env, "trl", "0.19.0", package=where != "second")
    assert not _collect(monkeypatch, [user, env])["trl"].other_copies


def test_one_copy_records_nothing_and_the_snapshot_stays_as_it_was(sites, monkeypatch):
    _, env, _ = sites
    _install(env, "trl", "0.19.0")
    trl = _collect(monkeypatch, [env])["trl"]
    assert trl.path is None and trl.path_kind is None and trl.other_copies == []


def _two() -> dict:
    return {
        "version": "0.14.0",
        "path": "~/.local/lib/python3.11/site-packages",
        "path_kind": "user site",
        "other_copies": [
            {
                "version": "0.19.0",
                "path": "/opt/conda/lib/python3.11/site-packages",
                "path_kind": "environment",
            }
        ],
    }


def test_the_snapshot_keeps_the_copies_and_reads_old_ones():
    facts = from_dict(snapshot(packages={**MODERN, "trl": _two()}))
    again = from_dict(json.loads(dumps(facts)))
    trl = again.packages["trl"]
    assert trl.path_kind == "user site" and trl.other_copies[0].version == "0.19.0"
    assert "other_copies" not in json.loads(dumps(facts))["packages"]["torch"]  # once: no new keys
    old = from_dict(snapshot(packages=MODERN))  # a snapshot written before these keys
    assert all(not p.other_copies for p in old.packages.values())


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"path_kind": "home"}, "path_kind"),
        ({"other_copies": [{"version": "1"}]}, "other_copies[0].path"),
        ({"other_copies": ["x"]}, "other_copies[0]"),
    ],
)
def test_malformed_copies_are_refused_naming_the_key(bad, key):
    trl = {**_two(), **bad}
    with pytest.raises(InputError, match=key.replace("[", r"\[").replace("]", r"\]")):
        from_dict(snapshot(packages={**MODERN, "trl": trl}))


def test_the_schema_documents_the_keys():
    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "envdoctor" / "schemas" / "snapshot.schema.json").read_text()
    )
    item = schema["properties"]["packages"]["additionalProperties"]["anyOf"][1]["properties"]
    assert {"path", "path_kind", "other_copies"} <= set(item)
