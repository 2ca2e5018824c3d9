"""The repository's own package: TRL's repository *is* TRL (its pyproject names ``trl``), so TRL
is declared there, at the version the tree installs as (``VERSION``, ``__version__``,
``[project].version``, ``setup.cfg``'s or ``setup.py``'s ``version``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from envdoctor.errors import InputError
from envdoctor.facts.declared.interface import Declaration, Found
from envdoctor.facts.interface import normalize_name

_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.M)
#: files read here are small; a bigger one is not a version file
MAX_BYTES = 256 * 1024


def own_package(root: Path) -> Found:
    """A declaration of the package the repository builds (empty when it names none)."""
    for reader in (_pyproject, _setup_cfg, _setup_py):
        try:
            got = reader(root)
        except (InputError, OSError, ValueError, SyntaxError, RecursionError):
            continue
        if got is not None:
            name, version, shown, line = got
            version = version or _version_file(root, name)
            spec = f"=={version}" if version and _valid(version) else ""
            return Found(
                declarations=[
                    Declaration(normalize_name(name), spec, shown, line, via="the repository's own package")
                ],
                notes=[
                    f"{shown}:{line}: the repository is the package {name} itself "
                    f"({version or 'version not read'})"
                ],
            )
    return Found()


def _valid(version: str) -> bool:
    from envdoctor import versions

    return versions.parse(version) is not None


def _read(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_BYTES:
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _line(text: str, needle: str) -> int:
    return next((i + 1 for i, line in enumerate(text.splitlines()) if needle in line), 1)


def _pyproject(root: Path) -> tuple[str, str | None, str, int] | None:
    text = _read(root / "pyproject.toml")
    if text is None:
        return None
    from envdoctor.settings import parse_toml

    project = parse_toml(text, "pyproject.toml").get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        return None
    version = project.get("version") if isinstance(project.get("version"), str) else None
    return project["name"], version, "pyproject.toml", _line(text, "name")


def _setup_cfg(root: Path) -> tuple[str, str | None, str, int] | None:
    text = _read(root / "setup.cfg")
    if text is None:
        return None
    import configparser

    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(text)
    except configparser.Error:
        return None
    if not cfg.has_option("metadata", "name"):
        return None
    version = cfg.get("metadata", "version", fallback="").strip()
    return (
        cfg.get("metadata", "name").strip(),
        (version if version and ":" not in version else None),
        "setup.cfg",
        _line(text, "name"),
    )


def _setup_py(root: Path) -> tuple[str, str | None, str, int] | None:
    text = _read(root / "setup.py")
    if text is None:
        return None
    tree = ast.parse(text)
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        if not (
            (isinstance(f, ast.Name) and f.id == "setup")
            or (isinstance(f, ast.Attribute) and f.attr == "setup")
        ):
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        name = kw.get("name")
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            v = kw.get("version")
            version = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
            return name.value, version, "setup.py", name.lineno
    return None


def _version_file(root: Path, name: str) -> str | None:
    """``VERSION`` at the root, else ``__version__`` in the package's ``__init__.py``."""
    text = _read(root / "VERSION")
    if text and text.strip() and len(text.strip()) < 64:
        return text.strip()
    pkg = normalize_name(name).replace("-", "_")
    for init in (root / pkg / "__init__.py", root / "src" / pkg / "__init__.py"):
        text = _read(init)
        m = _VERSION.search(text or "")
        if m:
            return m.group(1)
    return None
