"""Errors that mean "your input is wrong": the CLI prints them and exits 2, no traceback."""

from __future__ import annotations


class InputError(Exception):
    """Unreadable or invalid input; ``source`` names it (a file, a variable, a flag)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem
