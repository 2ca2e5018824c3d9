"""scripts/derive_stdlib_versions.py on a small stored copy of typeshed's stdlib stubs
(tests/fixtures/typeshed_stdlib, offline): the first Python of each module, name, keyword and
builtin method from VERSIONS and the ``sys.version_info`` guards; a newer source without the old
guards does not lower them."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "typeshed_stdlib"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "derive_stdlib_versions", ROOT / "scripts" / "derive_stdlib_versions.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(tmp_path: Path, *dirs: Path) -> dict:
    out = tmp_path / "out.json"
    args = [a for d in dirs for a in ("--dir", str(d))]
    assert _script().main([*args, "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_guards_and_versions_give_each_names_first_python(tmp_path: Path) -> None:
    doc = _run(tmp_path, FIXTURE)
    assert doc["schema"] == "envdoctor.stdlib_versions/1"
    assert doc["modules"] == {"graphlib": "3.9", "tomllib": "3.11"}  # 3.0 / 3.7 modules: below the floor
    assert doc["removed"] == {"distutils": "3.12"}
    typing = doc["names"]["typing"]
    assert typing["Unpack"] == "3.11" and typing["Self"] == "3.11" and typing["assert_never"] == "3.11"
    assert typing["TypeAlias"] == "3.10"  # the else branch of a ``<`` guard
    assert "Any" not in typing and "_OldOnly" not in typing and "_SpecialForm" not in typing
    assert doc["parameters"]["dataclasses.dataclass"] == {
        "kw_only": "3.10",
        "slots": "3.10",
        "weakref_slot": "3.11",
    }
    assert doc["parameters"]["builtins.zip"] == {"strict": "3.10"}
    assert doc["members"]["str"] == {"removeprefix": "3.9"}
    # one platform's name is no Python version's; a platform's binding lowers a guarded one
    assert doc["names"]["os"] == {"listdrives": "3.12"}


def test_a_newer_source_without_the_guards_keeps_the_older_sources_version(tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(FIXTURE, new)
    (new / "typing.pyi").write_text("Any: object\nUnpack: object\nLiteral: object\nReadOnly: object\n")
    (new / "VERSIONS").write_text((FIXTURE / "VERSIONS").read_text() + "annotationlib: 3.14-\n")
    doc = _run(tmp_path, FIXTURE, new)
    assert doc["names"]["typing"]["Unpack"] == "3.11"  # the old source's guard, not the new one's 3.0
    assert "ReadOnly" not in doc["names"]["typing"]  # unguarded in the only source that has it
    assert doc["modules"]["annotationlib"] == "3.14"


def test_the_stored_data_names_the_boundary_cases() -> None:
    doc = json.loads((ROOT / "rules" / "knowledge" / "stdlib_versions.json").read_text())
    assert doc["names"]["typing"]["Unpack"] == "3.11"
    assert doc["names"]["functools"]["cache"] == "3.9"
    assert doc["modules"]["tomllib"] == "3.11"
    assert doc["parameters"]["dataclasses.dataclass"]["slots"] == "3.10"
    assert doc["parameters"]["builtins.zip"]["strict"] == "3.10"
    assert all(s["repository"] == "https://github.com/python/typeshed" for s in doc["sources"])
