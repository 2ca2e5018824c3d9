"""A traceback as data: its frames (oldest first) and its exception, with the exceptions chained
before it. Parsed from a log by ``envdoctor.triage.traceback``; read by every structural reader."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: a file of Python's own library: POSIX ``…/lib/python3.12/argparse.py``, Windows
#: ``…\\Python312\\Lib\\importlib\\__init__.py`` (a per-user install's ``…\\Programs\\Python\\…``),
#: outside site-packages
_STDLIB = re.compile(
    r"/lib/python3\.\d{1,2}/(?!site-packages/|dist-packages/)"
    r"|(?i:[\\/]python3\d{0,2}[\\/]lib[\\/](?!site-packages[\\/]))"
)


def python_own_path(path: str) -> bool:
    """``path`` is Python's own: ``<frozen importlib._bootstrap>`` or a file of the standard library
    (POSIX or Windows). Not ``<string>`` (code compiled at run time) nor a path a paste shortened
    (``<...>/site-packages/…``)."""
    return path.startswith("<frozen ") or _STDLIB.search(path) is not None


@dataclass(frozen=True)
class Frame:
    """One frame: the distribution that holds its file (``None``: the user's code or Python's),
    the file, the path inside the package (``trainer/grpo_trainer.py``), the function, the line
    and the source line printed under it."""

    package: str | None
    path: str
    module_path: str
    function: str
    line: int
    code: str = ""

    @property
    def python_own(self) -> bool:
        """Python's own frame (``python_own_path``), never a package's."""
        return self.package is None and python_own_path(self.path)

    @property
    def at(self) -> str:
        """``trainer/grpo_trainer.py:412``; the path alone where the line is not known (0)."""
        return f"{self.module_path}:{self.line}" if self.line else self.module_path


@dataclass
class Traceback:
    """One exception with its frames (oldest first); ``chain``: the exceptions before it that it
    was raised while handling (``cause``: "direct cause" or "during handling"), oldest first."""

    frames: list[Frame] = field(default_factory=list)
    exc_type: str = ""
    message: str = ""
    line_no: int = 0  # where the exception's line is in the log (0: the failing line itself)
    chain: list[Traceback] = field(default_factory=list)
    cause: str = ""
    #: the frame (its index) whose line made the call the message is about, where a message that
    #: names no class was qualified from that line (``callsite.qualify``); -1: none
    call_site: int = -1
    #: the innermost frame of the generic code that raised on the call site's behalf (an attribute
    #: hook: ``raisethrough.hand_on``); None: the exception was raised where its frames end
    through: Frame | None = None

    @property
    def name(self) -> str:
        """The class name without its module (``torch.OutOfMemoryError``: ``OutOfMemoryError``)."""
        return self.exc_type.rsplit(".", 1)[-1]

    def packages(self) -> list[str | None]:
        return [f.package for f in self.frames]

    def shown_frames(self) -> list[Frame]:
        """The frames that tell where the exception came from: its own (those of the exceptions
        chained to it where it shows none), up to the call's site where one was read from a
        line (the wrappers after it only handed the arguments on)."""
        if self.call_site >= 0:
            return self.frames[: self.call_site + 1]
        return [f for t in self.all() for f in t.frames] if not self.frames else self.frames

    def all(self) -> list[Traceback]:
        """This exception and those chained to it, oldest first."""
        return [*self.chain, self]
