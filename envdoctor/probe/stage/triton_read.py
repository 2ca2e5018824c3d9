"""Triton's kernel cache for the probe's processes: written in the probe's own folder, read also
from the user's (never written there).

The probe keeps every cache private (``staging.private_dirs``), so a vLLM it starts compiles its
Triton kernels again even where the user's own runs left them compiled: 15 s of a probe
server's start on an H200. Triton takes its cache manager from ``TRITON_CACHE_MANAGER``
(``module:Class``); the probe copies this file, alone, to a folder of its own under the name
``envdoctor_triton_read`` and names its class there. A kernel is looked up in the probe's cache
(``TRITON_CACHE_DIR``), then in the user's (``ENVDOCTOR_TRITON_READ_FROM``), where Triton only
opens files to read them; every kernel it compiles is written to the probe's. The keys are
Triton's own (its version, the kernel's source, the GPU), so an entry of another release is
simply not found. Standalone: the processes that load it need nothing of envdoctor.
"""

from __future__ import annotations

import os
from typing import Any

try:
    from triton.runtime.cache import FileCacheManager as _Base
except Exception:  # noqa: BLE001 - a Triton without it never loads a manager by name
    _Base = object

#: the user's Triton cache folder (set by the probe only where it exists)
READ_FROM = "ENVDOCTOR_TRITON_READ_FROM"


class ReadThroughCacheManager(_Base):
    """Triton's file cache in the probe's folder, falling back to reading the user's."""

    cache_dir: str  # Triton's: this key's folder in the probe's cache

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        super().__init__(key, override=override, dump=dump)
        base = os.environ.get(READ_FROM, "")
        # override / dump folders are Triton's debugging aids: left as Triton has them
        self._user_dir = os.path.join(base, key) if base and not override and not dump else None

    def _from_user(self, method: str, filename: str) -> Any:
        """``method`` of the base class answered from the user's folder (a read: ``get_file``
        and ``get_group`` only look and open)."""
        if self._user_dir is None or not os.path.isdir(self._user_dir):
            return None
        own = self.cache_dir
        self.cache_dir = self._user_dir
        try:
            return getattr(super(), method)(filename)
        except (OSError, ValueError):  # unreadable or half-written there: compiled here instead
            return None
        finally:
            self.cache_dir = own

    def get_file(self, filename: str) -> str | None:
        found = super().get_file(filename)
        return found if found is not None else self._from_user("get_file", filename)

    def get_group(self, filename: str) -> dict[str, str] | None:
        found = super().get_group(filename)
        return found if found is not None else self._from_user("get_group", filename)
