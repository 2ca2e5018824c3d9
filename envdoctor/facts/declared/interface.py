"""The contract of every declared-stack reader: a file in, ``Declaration``s out.

A reader is a module with ``read(path: Path, shown: str) -> Found``; ``shown`` is how the file
is named in findings (relative to the repository). Readers never run the user's code and raise
``InputError`` naming the file when it cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envdoctor import versions
from envdoctor.facts.interface import normalize_name
from envdoctor.facts.packages import parse_requirement

#: What the training machine is (markers are evaluated for it, not for the committing laptop).
TARGET = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
          "platform_machine": "x86_64"}


@dataclass(frozen=True)
class Declaration:
    """One package the repository declares: ``specifier`` is ``==0.18.0`` for a pin, ``>=0.17``
    for a range, ``""`` for any version; ``locked`` when a lock file records the exact install."""

    name: str
    specifier: str
    file: str
    line: int
    extras: tuple[str, ...] = ()
    locked: bool = False
    via: str = ""  # set when another declaration implies this one: "trl[vllm]==0.18.0"

    @property
    def pinned(self) -> str | None:
        """The exact version, when the declaration allows only one."""
        specs = list(versions.spec(self.specifier) or ()) if self.specifier else []
        if len(specs) == 1 and specs[0].operator in ("==", "===") \
                and not specs[0].version.endswith(".*"):
            return specs[0].version
        return None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def text(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}"

    @property
    def said(self) -> str:
        """``trl>=0.17 (requirements.txt:2)`` / ``vllm>=0.8.3 via trl[vllm]==0.18.0 (…:5)``."""
        return f"{self.text}{' via ' + self.via if self.via else ''} ({self.where})"


@dataclass
class Found:
    """What one file declares, plus notes (what was seen and not read, and why)."""

    declarations: list[Declaration] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def add(self, other: Found) -> None:
        self.declarations += other.declarations
        self.notes += [n for n in other.notes if n not in self.notes]
        self.files += [f for f in other.files if f not in self.files]


def requirement(text: str, file: str, line: int, locked: bool = False) -> Declaration | None:
    """A PEP 508 requirement string as a ``Declaration``; None when it is not one (a URL, a
    local path, an option) or its marker excludes a Linux training machine."""
    req = parse_requirement(text.strip())
    if req is None or req.url:
        return None  # a direct reference (git, path): no version to judge
    if req.marker is not None:
        try:
            if not req.marker.evaluate({**TARGET, "extra": ""}):  # over packaging's defaults
                return None
        except Exception:
            pass  # an undecidable marker: keep the declaration
    return Declaration(name=normalize_name(req.name), specifier=str(req.specifier), file=file,
                       line=line, extras=tuple(sorted(req.extras)), locked=locked)


def line_of(lines: list[str], needle: str, start: int = 0) -> int:
    """The 1-based number of the first line at or after ``start`` holding ``needle`` (1 if none)."""
    for i in range(start, len(lines)):
        if needle in lines[i]:
            return i + 1
    return 1


def text_of(path, shown: str) -> str:
    """A user's file as text, bounded in size; problems are ``InputError``s naming ``shown``."""
    from envdoctor.errors import read_input_text
    from envdoctor.plan.config_files import MAX_BYTES

    return read_input_text(path, shown, MAX_BYTES)


def toml_of(path, shown: str) -> tuple[dict, list[str]]:
    """A TOML file parsed (``InputError`` naming ``shown`` when it is not TOML), and its lines."""
    from envdoctor.settings import parse_toml

    text = text_of(path, shown)
    return parse_toml(text, shown), text.splitlines()


def lock_entries(path, shown: str, table: str) -> Found:
    """The ``[[table]]`` entries of a TOML lock file (uv.lock, poetry.lock, pylock.toml) as exact
    pins, each at the line of its ``name = "…"``."""
    import re

    from envdoctor import versions

    data, lines = toml_of(path, shown)
    found = Found(files=[shown])
    entries = data.get(table)
    starts = [i for i, line in enumerate(lines) if line.strip() == f"[[{table}]]"]
    for n, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        name, version = entry.get("name"), entry.get("version")
        if not isinstance(name, str) or not isinstance(version, str) \
                or versions.parse(version) is None or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            continue
        start = starts[n] if n < len(starts) else 0
        found.declarations.append(Declaration(
            name=normalize_name(name), specifier=f"=={version}", file=shown,
            line=line_of(lines, "name", start) if starts else line_of(lines, f'"{name}"'),
            locked=True))
    return found
