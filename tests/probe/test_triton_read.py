"""The probe's Triton cache (probe/stage/triton_read.py, staging.kernel_cache_reads): kernels
the user's runs compiled are read from the user's cache, every kernel compiled goes to the
probe's, and the user's cache is never written. Triton is a stand-in of its cache module
(the same interface: a manager per key under ``TRITON_CACHE_DIR``, files and groups of files),
loaded by name from ``TRITON_CACHE_MANAGER`` in a fresh interpreter, as Triton loads it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from envdoctor.probe.stage.staging import kernel_cache_reads, user_triton_cache

STAND_IN = """
import json, os

class FileCacheManager:
    def __init__(self, key, override=False, dump=False):
        root = os.environ["TRITON_DUMP_DIR" if dump else "TRITON_CACHE_DIR"]
        self.cache_dir = os.path.join(root, key)
        os.makedirs(self.cache_dir, exist_ok=True)

    def _make_path(self, name):
        return os.path.join(self.cache_dir, name)

    def get_file(self, name):
        path = self._make_path(name)
        return path if os.path.exists(path) else None

    def get_group(self, name):
        path = self.get_file("__grp__" + name)
        if path is None:
            return None
        with open(path) as fh:
            children = json.load(fh)["child_paths"]
        return {c: p for c, p in children.items() if os.path.exists(p)}

    def put(self, data, name, binary=True):
        path = self._make_path(name)
        with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        return path

    def put_group(self, name, group):
        return self.put(json.dumps({"child_paths": group}), "__grp__" + name, binary=False)


def get_cache_manager(key):
    import importlib
    module, name = os.environ["TRITON_CACHE_MANAGER"].split(":")
    return getattr(importlib.import_module(module), name)(key)
"""

SESSION = """
import json, os
from triton.runtime.cache import get_cache_manager
seen = {}
m = get_cache_manager("KEYA")
seen["user_file"] = m.get_file("kernel.cubin")
seen["user_group"] = m.get_group("kernel.json")
seen["missing"] = m.get_file("other.cubin")
seen["put"] = m.put(b"new", "fresh.cubin")
seen["again"] = m.get_file("fresh.cubin")
seen["own_first"] = get_cache_manager("KEYB").get_file("both.cubin")
dump_cls = type(m)
seen["dump"] = dump_cls("KEYA", dump=True).get_file("kernel.cubin")
print(json.dumps(seen))
"""


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _users_cache(tmp: Path) -> Path:
    user = tmp / "home" / ".triton" / "cache"
    (user / "KEYA").mkdir(parents=True)
    (user / "KEYB").mkdir(parents=True)
    (user / "KEYA" / "kernel.cubin").write_bytes(b"compiled before")
    (user / "KEYA" / "kernel.json").write_text("{}")
    group = {name: str(user / "KEYA" / name) for name in ("kernel.cubin", "kernel.json")}
    (user / "KEYA" / "__grp__kernel.json").write_text(json.dumps({"child_paths": group}))
    (user / "KEYB" / "both.cubin").write_bytes(b"the user's")
    return user


def test_kernels_are_read_from_the_users_cache_and_written_only_to_the_probes(tmp_path):
    user = _users_cache(tmp_path)
    stand_in = tmp_path / "site" / "triton" / "runtime"
    stand_in.mkdir(parents=True)
    for folder in (stand_in.parent, stand_in):
        (folder / "__init__.py").write_text("")
    (stand_in / "cache.py").write_text(STAND_IN)
    probe = tmp_path / "probe"
    (probe / "triton" / "KEYB").mkdir(parents=True)
    (probe / "triton" / "KEYB" / "both.cubin").write_bytes(b"the probe's")
    user_env = {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(tmp_path / "site")}
    reads = kernel_cache_reads(probe, user_env)
    before = _tree(user)
    env = {
        **os.environ,
        **user_env,
        **reads,
        "TRITON_CACHE_DIR": str(probe / "triton"),
        "TRITON_DUMP_DIR": str(probe / "dump"),
    }
    out = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["user_file"] == str(user / "KEYA" / "kernel.cubin")
    assert seen["user_group"] == {
        "kernel.cubin": str(user / "KEYA" / "kernel.cubin"),
        "kernel.json": str(user / "KEYA" / "kernel.json"),
    }
    assert seen["missing"] is None
    assert seen["put"] == seen["again"] == str(probe / "triton" / "KEYA" / "fresh.cubin")
    assert seen["own_first"] == str(probe / "triton" / "KEYB" / "both.cubin")  # the probe's own first
    assert seen["dump"] is None  # Triton's dump folder is not read through
    assert _tree(user) == before  # not a byte, not a timestamp of the user's cache changed
    assert reads["PYTHONPATH"].split(os.pathsep) == [str(probe / "pylib"), str(tmp_path / "site")]


def test_nothing_is_read_through_without_a_users_cache_or_with_a_manager_of_their_own(tmp_path):
    assert kernel_cache_reads(tmp_path / "probe", {"HOME": str(tmp_path)}) == {}
    assert user_triton_cache({"HOME": str(tmp_path)}) is None
    user = _users_cache(tmp_path)
    own = {"HOME": str(tmp_path / "home"), "TRITON_CACHE_MANAGER": "their.module:Manager"}
    assert kernel_cache_reads(tmp_path / "probe", own) == {}
    assert not (tmp_path / "probe").exists()
    named = {"TRITON_CACHE_DIR": str(user)}
    assert user_triton_cache(named) == user
    assert kernel_cache_reads(tmp_path / "probe", named)["ENVDOCTOR_TRITON_READ_FROM"] == str(user)
