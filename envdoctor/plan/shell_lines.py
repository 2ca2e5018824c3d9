"""Shell script text as bash reads it, for the hook's readers of a repository's launch scripts:
logical lines (``\\``-newline pairs joined, quoted strings run on to the line that closes them,
heredoc bodies left out), the words of a line (as ``shlex`` splits them, by regular
expressions), and which commands start a launch. Nothing is run."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator

from envdoctor.plan import shell_words
from envdoctor.plan.readme_blocks import continues
from envdoctor.plan.repo_paths import _commands, _strip_prefix

MAX_LINE = 8_000  # a logical line longer than this is data (a quoted block), not a launch
MAX_QUOTED = 200  # lines a quoted string may span
#: programs that start a training or generation process (what a launch script is for)
LAUNCHERS = re.compile(
    r"^(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed|trl|vllm|swift|llamafactory-cli|"
    r"lighteval|srun|mpirun|ray|.*\.py)$"
)
EXPORT = re.compile(
    r"^\s*(?:export|declare\s+-[a-zA-Z]*x[a-zA-Z]*|typeset\s+-[a-zA-Z]*x[a-zA-Z]*)\s+(?P<rest>.*)$"
)
_HEREDOC = re.compile(r"<<-?\s*['\"]?(?P<tag>[A-Za-z_][A-Za-z0-9_]*)['\"]?")


_QUOTING = re.compile(r"""\\.|'[^']*'|"(?:[^"\\]|\\.)*"|(?:^|(?<=\s))#.*|['"]""", re.S)


def _open_quote(line: str) -> bool:
    """Whether a line leaves a quote open (bash reads on to the line that closes it); a ``#``
    at a word's start outside quotes starts a comment."""
    if "'" not in line and '"' not in line:
        return False
    for m in _QUOTING.finditer(line):
        token = m.group(0)
        if token in ("'", '"'):
            return True
        if token.startswith("#"):
            return False
    return False


@functools.lru_cache(maxsize=256)
def bash_lines(text: str) -> list[tuple[int, str, str]]:
    """(first line, the logical line as bash reads it, the last physical line's text) of a
    script whose line ends are ``\\n``: ``\\``-newline pairs removed, heredoc bodies left out."""
    raw = text.split("\n")
    out: list[tuple[int, str, str]] = []
    i = 0
    while i < len(raw):
        start = i
        parts = [raw[i]]
        while continues(parts[-1]) and i + 1 < len(raw):
            parts[-1] = parts[-1][:-1]
            i += 1
            parts.append(raw[i])
        i += 1
        joined = "".join(parts)
        extra = 0
        while _open_quote(joined) and i < len(raw) and extra < MAX_QUOTED:
            joined += "\n" + raw[i]  # a quoted string runs on to the line that closes it
            i += 1
            extra += 1
        out.append((start + 1, joined, raw[i - 1]))
        m = _HEREDOC.search(joined) if "<<" in joined and not joined.lstrip().startswith("#") else None
        if m is not None:  # skip the heredoc's body up to its tag
            tag = m["tag"]
            while i < len(raw) and raw[i].strip() != tag:
                i += 1
            i += 1
    return out


_WORD = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+|['"].*|\\\Z""", re.S)
_WHOLE = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""", re.S)
_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""", re.S)
_IN_DOUBLE = re.compile(r"""\\(["\\])""")  # as shlex: only a quote or a backslash is escaped


def _unquote(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    if m.group(2) is not None:
        return _IN_DOUBLE.sub(r"\1", m.group(2))
    return m.group(3)


def split_words(line: str) -> list[str] | None:
    """The words of a shell line as ``shlex.split(line, comments=True)`` gives them (quotes
    removed, a comment from a word starting with ``#``), None on an unclosed quote; by regular
    expressions, an order of magnitude faster than shlex's scan."""
    if "$(" in line:  # a command substitution stays inside its word (its quotes are its own)
        try:
            return shell_words.split(line, comments=True)
        except ValueError:
            return None
    if not any(c in line for c in "'\"\\#"):
        return line.split()
    out: list[str] = []
    for m in _WORD.finditer(line):
        word = m.group(0)
        if word.startswith("#"):
            break
        if (word.startswith(("'", '"')) and not _closed(word)) or word == "\\":
            return None  # an unclosed quote, a backslash with nothing to escape
        out.append(_QUOTED.sub(_unquote, word) if any(c in word for c in "'\"\\") else word)
    return out


def _closed(word: str) -> bool:
    """Whether every quote a word opens is closed (the word matched as a whole)."""
    return _WHOLE.fullmatch(word) is not None


@functools.lru_cache(maxsize=8192)
def line_runs(line: str) -> list[tuple[list[str], list[str]]]:
    """(environment prefix, command words) of each simple command of a logical line."""
    if len(line) > MAX_LINE:
        return []
    words = split_words(line)
    if not words:
        return []
    return [_strip_prefix(c) for c in _commands(words)]


_LAUNCH_WORD = re.compile(
    r"\b(?:python\d?(?:\.\d+)?|accelerate|torchrun|deepspeed|trl|vllm|swift|llamafactory-cli|lighteval|"
    r"srun|mpirun|ray|unset|source)\b|\.py\b|^\s*\.\s"
    # `uv run -m pkg.train` names no python: the wrappers' peel makes it `python -m pkg.train`
    r"|\buv\s+run\b"
)


def may_launch(line: str) -> bool:
    """Whether a line may run a launch (a cheap test before splitting it into words)."""
    return _LAUNCH_WORD.search(line) is not None


def is_launch(run: list[str]) -> bool:
    if not run:
        return False
    prog = os.path.basename(run[0])
    if not LAUNCHERS.match(prog):
        return False
    if prog.startswith("python"):
        return any(w.endswith(".py") or w == "-m" for w in run[1:4])
    if prog == "accelerate":
        return run[1:2] == ["launch"]
    if prog == "trl":
        return len(run) > 1 and not run[1].startswith("-")
    if prog == "vllm":
        return run[1:2] == ["serve"]
    return True


def option_line(line: str) -> bool:
    """A line bash would run as a command named like an option (``--port 8000``)."""
    s = line.strip()
    return bool(re.match(r"^--?[A-Za-z][\w.-]*(?:[= ]|$)", s)) and not re.match(r"^--?[\w.-]+\)", s)


#: ``NAME=value`` / ``export NAME=value`` alone on a line
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S+)\s*$")


def command_runs(text: str) -> Iterator[tuple[int, list[str], dict[str, str]]]:
    """``(line number, run, variables)`` for each command run of a script's lines that may launch
    something, with the variables its ``NAME=value`` lines assigned before it (quotes removed)."""
    values: dict[str, str] = {}
    for number, line, _ in bash_lines(text.replace("\r\n", "\n")):
        m = _ASSIGNMENT.match(line)
        if m:
            values[m["name"]] = m["value"].strip("\"'")
            continue
        if may_launch(line):
            for _, run in line_runs(line):
                if run:
                    yield number, run, values
