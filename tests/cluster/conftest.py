"""Markers of the cluster tests."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "distributed: starts several processes with torchrun")
