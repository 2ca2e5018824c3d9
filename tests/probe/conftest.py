"""Fixtures of the probe tests."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def probe_tmp(tmp_path, monkeypatch) -> Path:
    """A temp dir of this test's own under which the probes it runs make theirs (TMPDIR for the
    processes it starts, ``tempfile.tempdir`` for ``run_probe`` in this process): what mentions
    it is this test's (``tests.probe.leftovers.left_behind``)."""
    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    return path
