"""The contract of every declared-stack reader: a file in, ``Declaration``s out.

A reader is a module with ``read(path: Path, shown: str) -> Found``; ``shown`` is how the file
is named in findings (relative to the repository). Readers never run the user's code and raise
``InputError`` naming the file when it cannot be read.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envdoctor import versions
from envdoctor.facts.interface import normalize_name
from envdoctor.facts.packages import parse_requirement
from envdoctor.units import MiB, size_text

#: What the training machine is (markers are evaluated for it, not for the committing laptop).
TARGET = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "x86_64",
}

# Caps that bound the time of reading a repository's declared stack (measured on a loaded
# 2-core machine; docs/reliability.md "Declared stack"). Beyond any: exit 2 naming the file.
#: requirements, dependencies, lock entries and ``pip install`` words looked at, all files
#: together (parsing one costs 20-80 µs; a real stack has a few hundred)
MAX_ITEMS = 10_000
#: declaration files read, includes counted (a repository has a handful)
MAX_FILES = 64
#: bytes read, all files together (the per-line work of a requirements file is about 0.4 µs
#: of CPU per line: 8 MiB of empty lines, the worst, takes 3.5 s)
MAX_STACK_BYTES = 8 * MiB
#: notes kept (a file of 10,000 odd lines is said once per kind, then counted)
MAX_NOTES = 50


@dataclass
class Budget:
    """What one reading of a declared stack has spent (``read_stack`` opens one)."""

    items: int = 0
    files: int = 0
    bytes: int = 0


_BUDGET: ContextVar[Budget | None] = ContextVar("declared_budget", default=None)


@contextmanager
def budget() -> Iterator[Budget]:
    """A fresh budget for the readers called inside (without one, readers count nothing)."""
    token = _BUDGET.set(Budget())
    try:
        yield _BUDGET.get()  # type: ignore[misc]
    finally:
        _BUDGET.reset(token)


def spend(shown: str, items: int = 1) -> None:
    """Count ``items`` declarations looked at in ``shown``; over ``MAX_ITEMS``: exit 2."""
    spent = _BUDGET.get()
    if spent is None:
        return
    spent.items += items
    if spent.items > MAX_ITEMS:
        from envdoctor.errors import UnreadableInput

        raise UnreadableInput(
            shown,
            f"the declared stack holds more than {MAX_ITEMS:,} "
            "requirements (a real one has a few hundred); not read further",
        )


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
    url: str = ""  # a direct reference (``trl @ git+https://…@<sha>``): where it comes from
    ref: str = ""  # the git commit, tag or branch after ``@`` in ``url`` ("" when none)
    #: declared as an override of every other requirement on it (uv's ``override-dependencies``):
    #: the installer puts it in place whatever another package requires
    override: bool = False

    @property
    def pinned(self) -> str | None:
        """The exact version, when the declaration allows only one."""
        specs = list(versions.spec(self.specifier) or ()) if self.specifier else []
        if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith(".*"):
            return specs[0].version
        return None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def text(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        if self.url:
            return f"{self.name}{extras} @ {self.url}"
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
    #: file → the project it belongs to (the folder of its setup.py / pyproject.toml /
    #: setup.cfg, "" for the repository's root); an included file belongs to its includer's
    projects: dict[str, str] = field(default_factory=dict)
    #: requirement files whose ``pip install -r`` has an index option (``--extra-index-url``,
    #: ``-f``…) in the file or a file it includes; and pins with a local version (``+cu126``)
    indexed: list[str] = field(default_factory=list)
    local_pins: list[Declaration] = field(default_factory=list)
    #: ``file:line`` where the repository names an index outside its requirement files
    index_elsewhere: str = ""

    def add(self, other: Found) -> None:
        """Take ``other``'s declarations, files and notes (notes once each, at most
        ``MAX_NOTES``: a file of 10,000 odd lines says so once, not 10,000 times)."""
        self.declarations += other.declarations
        self.indexed += [f for f in other.indexed if f not in self.indexed]
        self.local_pins += other.local_pins
        for file, project in other.projects.items():
            self.projects.setdefault(file, project)
        have = set(self.notes)
        for note in other.notes:
            if note not in have and len(self.notes) < MAX_NOTES:
                self.notes.append(note)
                have.add(note)
        files = set(self.files)
        self.files += [f for f in other.files if f not in files]


def requirement(text: str, file: str, line: int, locked: bool = False) -> Declaration | None:
    """A PEP 508 requirement string as a ``Declaration``; None when it is not one (a URL, a
    local path, an option) or its marker excludes a Linux training machine."""
    req = parse_requirement(named_url(text.strip()))
    if req is None:
        return None
    url = ref = ""
    if req.url:
        if not req.url.startswith("git+"):
            return None  # a path, an archive, a wheel: no version to judge
        url, ref = req.url, git_ref(req.url)
    if req.marker is not None:
        try:
            if not req.marker.evaluate({**TARGET, "extra": ""}):  # over packaging's defaults
                return None
        except Exception:
            pass  # an undecidable marker: keep the declaration
    return Declaration(
        name=normalize_name(req.name),
        specifier=str(req.specifier),
        file=file,
        line=line,
        extras=tuple(sorted(req.extras)),
        locked=locked,
        url=url,
        ref=ref,
    )


def named_url(text: str) -> str:
    """A bare ``git+https://host/owner/repo.git@REF`` (which pip installs, finding the name
    itself) as the PEP 508 ``repo @ git+…``: the name from ``#egg=``, else the repository's;
    any other text as it is."""
    if not text.startswith("git+") or any(c.isspace() for c in text):
        return text
    frag = text.partition("#")[2]
    name = next((p[4:] for p in frag.split("&") if p.startswith("egg=")), "")
    if not name:
        path = text.split("#", 1)[0].split("://", 1)[-1].rpartition("@")
        repo = (path[0] if path[1] and "/" not in path[2] else "".join(path)).rstrip("/")
        name = repo.rsplit("/", 1)[-1].removesuffix(".git")
    return f"{name} @ {text}" if name and all(c.isalnum() or c in "._-" for c in name) else text


def git_ref(url: str) -> str:
    """The commit, tag or branch of a ``git+https://host/repo.git@REF#fragment`` URL ("" if none)."""
    path = url.split("#", 1)[0].split("://", 1)[-1]
    _, sep, ref = path.rpartition("@")
    return ref if sep and "/" not in ref else ""


def line_of(lines: list[str], needle: str, start: int = 0) -> int:
    """The 1-based number of the first line at or after ``start`` holding ``needle`` (1 if none).
    One scan: for one needle only (many needles: ``LineIndex``)."""
    for i in range(start, len(lines)):
        if needle in lines[i]:
            return i + 1
    return 1


_STRIP = "\"',;()[]{}&|\\"


def _tokens(line: str) -> Iterator[str]:
    """What a declaration can be on a line: each word (bare and without quotes and
    punctuation), each piece between quote marks, the line as a YAML list item."""
    for word in line.split():
        yield word
        yield word.strip(_STRIP)
    for quote in ('"', "'"):
        if quote in line:
            yield from line.split(quote)[1:-1]
    item = line.split(" #", 1)[0].strip()
    if item.startswith("- "):
        item = item[2:].strip()
    yield item
    yield item.strip("\"'")


class LineIndex:
    """The lines of a file, searched for many needles without rescanning it: one pass records
    where each needle stands as a token (``_tokens``); ``find`` is then a bisect. A needle
    never seen as a token (a YAML or TOML escape changed it) is looked for as a substring, in
    C (``str.find``), for the first ``FALLBACKS`` such needles of the file; later ones get the
    line the search started at. Time: linear in the file plus the needles."""

    FALLBACKS = 64

    def __init__(self, lines: list[str], needles: Iterable[str]) -> None:
        wanted = {n for n in needles if n}
        self._at: dict[str, list[int]] = {}
        for i, line in enumerate(lines):
            if not line:
                continue
            for token in _tokens(line):
                if token in wanted:
                    at = self._at.setdefault(token, [])
                    if not at or at[-1] != i:
                        at.append(i)
        self._lines = lines
        self._text: str | None = None
        self._starts: list[int] = []
        self._fallbacks = 0

    def find(self, needle: str, start: int = 0) -> int:
        """The 1-based number of the first line at or after ``start`` (0-based) holding
        ``needle``; ``start + 1`` when none is found."""
        at = self._at.get(needle)
        if at:
            k = bisect.bisect_left(at, start)
            if k < len(at):
                return at[k] + 1
        if not needle or self._fallbacks >= self.FALLBACKS or start >= len(self._lines):
            return start + 1
        self._fallbacks += 1
        if self._text is None:  # built on the first miss: "\n" between lines as split
            self._text = "\n".join(self._lines)
            self._starts = list(itertools.accumulate((len(x) + 1 for x in self._lines[:-1]), initial=0))
        pos = self._text.find(needle, self._starts[start])
        if pos < 0:
            return start + 1
        return bisect.bisect_right(self._starts, pos)


def text_of(path: Path, shown: str, max_bytes: int | None = None) -> str:
    """A user's file as text, bounded in size (the file's and the stack's budget); problems are
    ``InputError``s naming ``shown``."""
    from envdoctor.errors import UnreadableInput, read_input_text
    from envdoctor.parsing import MAX_BYTES

    spent = _BUDGET.get()
    if spent is not None:
        spent.files += 1
        if spent.files > MAX_FILES:
            raise UnreadableInput(
                shown, f"more than {MAX_FILES} declaration files (includes counted); not read"
            )
    limit = MAX_BYTES if max_bytes is None else max_bytes
    if spent is not None and MAX_STACK_BYTES - spent.bytes < limit:
        limit = max(0, MAX_STACK_BYTES - spent.bytes)
        text = read_input_text(
            path,
            shown,
            limit,
            f": only {limit:,} bytes were left of the "
            f"{size_text(MAX_STACK_BYTES, 'MiB', floor=True)} the declaration "
            "files may take in all",
        )
    else:
        text = read_input_text(path, shown, limit)
    if spent is not None:
        spent.bytes += len(text)
    return text


def resolved(path: Path, where: str) -> Path:
    """``path`` with its symlinks resolved; a symlink loop is an ``InputError`` naming
    ``where`` (pathlib raises RuntimeError or OSError for it)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:
        from envdoctor.errors import UnreadableInput

        raise UnreadableInput(where, f"{path.name}: cannot resolve it ({exc})") from None


def repository_root(path: Path, shown: str) -> Path:
    """The repository root: ``path`` less the parts of its repository-relative name ``shown``
    (the file's own folder when ``shown`` is absolute or climbs out with ``..``)."""
    parts = Path(shown).parts
    if Path(shown).is_absolute() or ".." in parts:
        return path.resolve().parent
    return path.resolve().parents[len(parts) - 1] if len(parts) > 1 else path.resolve().parent


def in_repository(target: Path, path: Path, shown: str) -> bool:
    """Whether ``target`` (resolved) lies inside the repository of the file ``path`` named
    ``shown``: an include (``-r``, ``COPY``) outside it is not read."""
    try:
        target.relative_to(repository_root(path, shown))
    except ValueError:
        return False
    return True


def toml_of(path: Path, shown: str) -> tuple[dict[str, Any], list[str]]:
    """A TOML file parsed once (``InputError`` naming ``shown`` when it is not TOML or holds
    more values than ``settings.MAX_TOML_VALUES``), and its lines."""
    from envdoctor.settings import parse_toml

    text = text_of(path, shown)
    return parse_toml(text, shown), text.splitlines()


#: the Python releases a training machine may run (a lock's markers are judged for any of them)
TARGET_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
MAX_MARKERS = 64  # a lock entry's resolution markers judged (uv writes a handful)


def for_target(markers: object) -> bool:
    """Whether a lock entry installs on a Linux x86-64 training machine: one of its markers
    (uv.lock ``resolution-markers``, a list; pylock.toml ``marker``, a string) holds there for
    some Python; True without markers, or when none can be read."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    said = [markers] if isinstance(markers, str) else markers
    if not isinstance(said, list) or not said:
        return True
    readable = False
    for text in said[:MAX_MARKERS]:
        if not isinstance(text, str):
            continue
        try:
            marker = Marker(text)
        except InvalidMarker:
            continue
        readable = True
        for py in TARGET_PYTHONS:
            env = {**TARGET, "python_version": py, "python_full_version": f"{py}.0", "extra": ""}
            try:
                if marker.evaluate(env):
                    return True
            except (UndefinedComparison, UndefinedEnvironmentName):
                return True  # undecidable: keep the entry
    return not readable


def lock_entries(path: Path, shown: str, table: str) -> Found:
    """The ``[[table]]`` entries of a TOML lock file (uv.lock, poetry.lock, pylock.toml) as exact
    pins, each at the line of its ``name = "…"``."""
    import re

    from envdoctor import versions

    data, lines = toml_of(path, shown)
    found = Found(files=[shown])
    entries = data.get(table)
    entries = entries if isinstance(entries, list) else []
    spend(shown, len(entries))
    starts = [i for i, line in enumerate(lines) if line.strip() == f"[[{table}]]"]
    index = LineIndex(
        lines, (str(e["name"]) for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str))
    )
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        name, version = entry.get("name"), entry.get("version")
        if (
            not isinstance(name, str)
            or not isinstance(version, str)
            or versions.parse(version) is None
            or not re.fullmatch(r"[A-Za-z0-9._-]+", name)
            or not for_target(entry.get("resolution-markers") or entry.get("marker"))
        ):
            continue
        found.declarations.append(
            Declaration(
                name=normalize_name(name),
                specifier=f"=={version}",
                file=shown,
                line=index.find(name, starts[n] if n < len(starts) else 0),
                locked=True,
            )
        )
    return found
