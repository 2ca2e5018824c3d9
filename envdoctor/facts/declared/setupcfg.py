"""``setup.cfg``: ``[options] install_requires`` / ``python_requires`` and every
``[options.extras_require]`` extra, as setuptools reads them (one requirement a line)."""

from __future__ import annotations

import configparser
from pathlib import Path

from envdoctor.facts.declared.interface import Declaration, Found, LineIndex, requirement, spend, text_of

PATTERNS = ("setup.cfg",)


def parse(path: Path, shown: str) -> tuple[configparser.ConfigParser | None, list[str]]:
    """The file as setuptools' config parser reads it (None when it is not one), and its lines."""
    text = text_of(path, shown)
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(text, source=shown)
    except configparser.Error:
        return None, text.splitlines()
    return cfg, text.splitlines()


def read(path: Path, shown: str) -> Found:
    found = Found(files=[shown])
    cfg, lines = parse(path, shown)
    if cfg is None:
        found.notes.append(f"{shown}: not an INI file setuptools reads; not read")
        return found
    texts: list[str] = []
    if cfg.has_option("options", "install_requires"):
        texts += _lines(cfg.get("options", "install_requires"))
    if cfg.has_section("options.extras_require"):
        for _, value in cfg.items("options.extras_require"):
            texts += _lines(value)
    spend(shown, len(texts))
    index = LineIndex(lines, texts)
    for text in texts:
        decl = requirement(text, shown, index.find(text))
        if decl is not None:
            found.declarations.append(decl)
    if cfg.has_option("options", "python_requires"):
        spec = cfg.get("options", "python_requires").strip()
        if spec:
            found.declarations.append(Declaration("python", spec, shown, index.find(spec)))
    return found


def _lines(value: str) -> list[str]:
    out = []
    for line in value.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", ";", "file:", "attr:")):
            out.append(line)
    return out
