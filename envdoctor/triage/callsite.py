"""The class a constructor's call error is about, read from the line that called it.

Python before 3.10 names no class in a constructor's binding error: ``TypeError: __init__() got an
unexpected keyword argument 'beta'``, ``__init__() missing 1 required positional argument: 'x'``,
``__init__() takes 2 positional arguments but 3 were given``. Such an error is raised in the frame
that made the call (the arguments never bound, the constructor's own frame never began), so that
frame's source line names the class: ``dpo_trainer = DPOTrainer(``. Decorators put wrapper frames
between the call and the constructor that hand every argument on (transformers'
``utils/deprecation.py`` ``wrapped_func``, huggingface_hub's ``utils/_deprecation.py`` ``inner_f``,
any ``functools.wraps`` wrapper: ``return func(*args, **kwargs)``); the call is the frame before
them. ``qualify`` writes the class into the message (``DPOTrainer.__init__() got …``, as Python
3.10 prints it), so every reader of a qualified message (the symbol history, the boundary, the
catalogue) answers it, and records the calling frame as the call's site (``Traceback.call_site``).

Nothing is qualified where the line does not name one class (``super().__init__(``, a call of a
variable, two classes on the line and no keyword to tell which), nor where the source line is not
shown.
"""

from __future__ import annotations

import re

from envdoctor.triage.traceback_model import Frame, Traceback

#: a constructor's binding errors, unqualified as Python < 3.10 prints them or qualified
_INIT_ERROR = re.compile(
    r"^(?P<cls>(?:[A-Za-z_]\w{0,100}\.){0,8})__init__\(\) "
    r"(?:got an unexpected keyword argument '(?P<kwarg>\w{1,200})'"
    r"|missing \d{1,3} required (?:positional|keyword-only) arguments?"
    r"|takes [\w ]{1,40} positional arguments? but \d{1,3} (?:were|was) given)"
)
#: msgspec's Struct constructor (vLLM's SamplingParams): "Unexpected keyword argument 'k'", no name
_STRUCT_ERROR = re.compile(r"^Unexpected keyword argument '(?P<kwarg>\w{1,200})'$")
#: a frame that hands on every argument it was given (a decorator's wrapper)
_PASS_ALL = re.compile(
    r"^(?:return\s+)?[\w.]{1,100}\((?:\s*self\s*,)?\s*\*\w{1,40}\s*,\s*\*\*\w{1,40}\s*\)\s*$"
)
#: the wrappers' functions, for a log that shows no source lines: transformers' deprecation
#: decorator, huggingface_hub's, and the names functools.wraps wrappers are commonly given
_WRAPPERS = frozenset({"wrapped_func", "inner_f", "_inner_fn", "wrapper", "_wrapper", "inner", "wrapped"})
#: a class called on a line: a capitalised name (dotted: ``trl.DPOTrainer(``) and its open parenthesis
_CLASS_CALL = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w{0,100}\.){0,6}(?P<cls>[A-Z]\w{0,100})\s?\(")


def _wrapper(f: Frame) -> bool:
    """A frame that only hands its arguments on: its line ``return func(*args, **kwargs)``, or
    (no line shown) a package's wrapper function by its name."""
    if f.code:
        return _PASS_ALL.match(f.code) is not None
    return f.package is not None and f.function in _WRAPPERS


def _args(code: str, start: int) -> str:
    """The text of the call whose ``(`` is at ``start``: up to its closing parenthesis, or to the
    line's end (a call continued on the lines after)."""
    depth = 0
    for i in range(start, len(code)):
        c = code[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return code[start : i + 1]
    return code[start:]


def called_class(code: str, kwarg: str | None) -> str | None:
    """The one class ``code`` calls (``kwarg``: the keyword that tells which where it calls
    several: the call whose own arguments pass it, the innermost such)."""
    calls = [(m.group("cls"), m.end() - 1) for m in _CLASS_CALL.finditer(code[:2000])]
    if len(calls) == 1:
        return calls[0][0]
    if not calls or not kwarg:
        return None
    passing = [
        (cls, len(_args(code, at)))
        for cls, at in calls
        if re.search(rf"(?<![\w.]){re.escape(kwarg)}\s?=(?!=)", _args(code, at))
    ]
    if not passing:
        return None
    return min(passing, key=lambda x: x[1])[0]  # the innermost call that passes it


def call_site(tb: Traceback) -> tuple[int, str, bool] | None:
    """The frame (its index) whose line calls the constructor a ``__init__()`` binding error is
    about, the class that line calls, and whether the message names its class itself; None where
    it cannot be told (a qualified message: only where wrappers stand between, the call being
    the innermost frame otherwise)."""
    if tb.name != "TypeError" or not tb.frames:
        return None
    m = _INIT_ERROR.match(tb.message) or _STRUCT_ERROR.match(tb.message)
    if m is None:
        return None
    i = len(tb.frames) - 1
    while i > 0 and _wrapper(tb.frames[i]):
        i -= 1
    code = tb.frames[i].code
    named = bool(m.groupdict().get("cls"))
    if not code or _wrapper(tb.frames[i]) or named and i == len(tb.frames) - 1:
        return None
    cls = called_class(code, m.group("kwarg"))
    return (i, cls, named) if cls is not None else None


def qualify(tb: Traceback) -> bool:
    """Name the class in ``tb``'s unqualified constructor error from its call's line (module
    docstring), and the call's site behind wrapper frames; whether the site was found."""
    found = call_site(tb)
    if found is None:
        return False
    i, cls, named = found
    struct = _STRUCT_ERROR.match(tb.message)
    if struct is not None:  # msgspec's words as Python's, for the histories that answer Python's
        tb.message = f"{cls}.__init__() got an unexpected keyword argument '{struct.group('kwarg')}'"
    elif not named:
        tb.message = f"{cls}.{tb.message}"
    tb.call_site = i
    return True
