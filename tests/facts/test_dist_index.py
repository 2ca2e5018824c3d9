"""Installed distributions are found from folder names; the standard library's reader only
where it could find one that no ``*.dist-info`` folder names (issue 29: asking it for each of the
~150 requirements that are not installed cost a static check a third of its time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from envdoctor.facts.packages import collect_packages
from tests.conftest import ROOT


def _site(tmp_path):
    site = tmp_path / "site"
    (site / "alpha-1.0.dist-info").mkdir(parents=True)
    (site / "alpha-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\nRequires-Dist: beta>=2\n"
        "Requires-Dist: gamma; extra == 'x'\nRequires-Dist: not-installed-anywhere>=1\n\n"
    )
    (site / "beta.egg-info").mkdir()  # an egg-info without version in its name
    (site / "beta.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: beta\nVersion: 2.5\n\n")
    return site


def test_egg_info_and_missing_requirements(tmp_path, monkeypatch):
    site = _site(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    found = collect_packages(("alpha", "beta", "no-such-dist"))
    assert found["alpha"].version == "1.0"
    assert found["beta"].version == "2.5"  # through importlib.metadata: an egg-info folder
    assert "no-such-dist" not in found and "not-installed-anywhere" not in found
    assert "gamma" not in found


def test_a_missing_requirement_is_not_looked_up(tmp_path):
    """Without any egg-info, zip or finder of its own on the path, importlib.metadata is not
    even imported: what it would say (not found) is known from the folder names."""
    site = _site(tmp_path)
    script = (
        "import json, sys\nfrom envdoctor.facts.packages import collect_packages\n"
        "found = collect_packages(('alpha', 'no-such-dist'))\n"
        "from envdoctor.facts.packages import _Index\n"
        "index = _Index()  # other egg-infos of the environment the tests run in\n"
        "print(json.dumps([sorted(found), 'importlib.metadata' in sys.modules,\n"
        "                  not (index._opaque or index._other - {'beta'})]))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    names, imported, _ = json.loads(proc.stdout)
    assert "alpha" in names and "no-such-dist" not in names and "not-installed-anywhere" not in names
    assert imported is True  # beta.egg-info is on the path: asked there
    (site / "beta.egg-info" / "PKG-INFO").unlink()
    (site / "beta.egg-info").rmdir()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    names, imported, clean = json.loads(proc.stdout)
    assert "alpha" in names
    if clean:  # no egg-info of its own in the environment the tests run in
        assert imported is False
