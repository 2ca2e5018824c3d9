"""A README's shell code blocks as a script: what a user who copies them runs (the hook's
readers of launch lines). Each line stays at its own line number; prose, other languages'
blocks and a terminal session's output lines are blanked."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*(?P<lang>[\w+-]*)")
_SHELL_LANGS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "shell-session"})


def continues(raw: str) -> bool:
    """Whether bash joins the next line to this one (an odd run of ``\\`` ends it, not in a
    comment line)."""
    if raw.lstrip().startswith("#"):
        return False
    n = len(raw) - len(raw.rstrip("\\"))
    return n % 2 == 1


def readme_blocks(text: str) -> str:
    """A README's shell code blocks, each line at its own line number (the rest blanked). In a
    block written as a terminal session (``$ command`` lines), only the prompted commands and
    their ``\\`` continuations are kept: the other lines are the commands' output."""
    out: list[str] = []
    block: list[str] | None = None
    shell = False
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m and block is not None:
            out += _commands_of_block(block) if shell else [""] * len(block)
            out.append("")
            block = None
        elif m:
            block, shell = [], m["lang"].lower() in _SHELL_LANGS
            out.append("")
        elif block is not None:
            block.append(line)
        else:
            out.append("")
    if block is not None:
        out += [""] * len(block)  # an unclosed fence: prose, not a block
    return "\n".join(out)


_PROMPT = re.compile(r"^\s*\$ ")


def _commands_of_block(block: list[str]) -> list[str]:
    if not any(_PROMPT.match(line) for line in block):
        return block
    out: list[str] = []
    going = False
    for line in block:
        if _PROMPT.match(line) or going:
            kept = _PROMPT.sub("", line, count=1)
            out.append(kept)
            going = continues(kept)
        else:
            out.append("")
    return out
