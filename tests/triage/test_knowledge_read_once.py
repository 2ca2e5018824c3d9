"""The per-package knowledge files (rules/knowledge/{fixes,frames,linehist,raises,signatures,symbols}/) are
decompressed once a process: a loader's cache holds every package present, so a pass over all of
them (fixhist's ``'C' object has no attribute 'a'`` reads each fix history) does not evict and
re-read them on the next message (19 fix histories against a cache of 16 did)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from envdoctor.knowledge import (
    fix_history,
    frame_index,
    line_history,
    raise_sites,
    signature_history,
    symbol_history,
)

LOADERS: list[tuple[Callable[[], tuple[str, ...]], Any]] = [
    (fix_history.packages, fix_history.fix_history),
    (frame_index.packages, frame_index.frame_index),
    (line_history.packages, line_history.line_history),
    (raise_sites.packages, raise_sites.raise_index),
    (signature_history.packages, signature_history.history),
    (symbol_history.packages, symbol_history.history),
]


@pytest.mark.parametrize(("packages", "load"), LOADERS)
def test_every_package_stays_read(packages: Callable[[], tuple[str, ...]], load: Any) -> None:
    names = packages()
    assert names
    assert load.cache_info().maxsize >= 2 * len(names)  # room to grow before a pass evicts
    load.cache_clear()
    for _ in range(2):
        for p in names:
            load(p)
    assert load.cache_info().misses == len(names)
