"""TRI036: a folder of the user's code named like a stack package imported in its place."""

from __future__ import annotations

from tests.conftest import run_cli

SHADOW = """Traceback (most recent call last):
  File "/home/u/proj/train.py", line 3, in <module>
    from datasets import load_dataset
ImportError: cannot import name 'load_dataset' from 'datasets' (/home/u/proj/datasets/__init__.py)
"""
INSTALLED = SHADOW.replace("/home/u/proj/datasets/", "/venv/lib/python3.11/site-packages/datasets/")
EDITABLE = "Obtaining file:///home/u/proj\nSuccessfully installed datasets-0.0.0\n" + SHADOW


def _rules(tmp_path, text):
    import json

    (tmp_path / "x.log").write_text(text)
    out = run_cli("triage", "--format", "json", str(tmp_path / "x.log"))
    return {f["rule"]: f["severity"] for f in json.loads(out.stdout)["findings"]}


def test_a_folder_outside_site_packages_named_like_datasets_is_tri036(tmp_path):
    assert _rules(tmp_path, SHADOW).get("TRI036") == "error"


def test_the_installed_package_lacking_the_name_is_not_tri036(tmp_path):
    assert "TRI036" not in _rules(tmp_path, INSTALLED)


def test_an_editable_install_in_the_log_is_quiet(tmp_path):
    assert "TRI036" not in _rules(tmp_path, EDITABLE)
