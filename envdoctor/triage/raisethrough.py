"""A raise made on the caller's behalf: the frame that asked is the raise's site.

Python's attribute protocol raises where the object is, not where the name was asked for: ``del
model._unwrapped_old_generate`` in Unsloth's ``for_training`` fails inside torch's
``Module.__delattr__`` (``super().__delattr__(name)``), ``model.vllm_engine`` inside
``Module.__getattr__`` (``raise AttributeError(…)``), and a wrapper that forwards a missing name
(PEFT's ``PeftModel.__getattr__``: ``return getattr(self.base_model, name)``, DeepSpeed's engine,
a package's lazy module ``__getattr__``) adds its own frames before it. Those frames are generic:
the code that failed is the one that read, set or deleted the name. For an ``AttributeError``
whose innermost frames are all a package's attribute hooks (``__getattr__``, ``__getattribute__``,
``__setattr__``, ``__delattr__``), the nearest frame before them that is not Python's own (an
import's ``<frozen importlib._bootstrap>`` ``_handle_fromlist``) is recorded as the raise's site
(``Traceback.call_site``, as ``callsite.qualify`` records a constructor's caller behind wrappers)
and the hooks' innermost frame as ``Traceback.through``; the readers of the raise's place (TRI003's
"raised in", the boundary, the fix and line histories) read ``shown_frames()``.

A hook of the user's own code is not handed on (the user's class is the place), nor a traceback
whose only frames are hooks (no caller shown).
"""

from __future__ import annotations

from envdoctor.triage.traceback_model import Frame, Traceback

#: the attribute protocol's hooks: a raise in them is about the name the caller asked for
HOOKS = frozenset({"__getattr__", "__getattribute__", "__setattr__", "__delattr__"})


def _hook(f: Frame) -> bool:
    return f.package is not None and f.function.rsplit(".", 1)[-1] in HOOKS


def _unnamed(f: Frame) -> bool:
    """A frame of code without a file of its own (``<string>``): machinery, never the asker."""
    return f.package is None and f.path.startswith("<")


def hand_on(tb: Traceback) -> bool:
    """Record the frame that made the attribute access an ``AttributeError`` raised in a
    package's attribute hooks is about (module docstring); whether one was."""
    if tb.name != "AttributeError" or tb.call_site >= 0 or not tb.frames or not _hook(tb.frames[-1]):
        return False
    i = len(tb.frames) - 1
    while i >= 0 and (_hook(tb.frames[i]) or (tb.frames[i].python_own or _unnamed(tb.frames[i]))):
        i -= 1
    if i < 0:
        return False
    tb.call_site = i
    tb.through = tb.frames[-1]
    return True


def bare_name(tb: Traceback) -> str | None:
    """The attribute an ``AttributeError`` handed on from a hook names by its bare name (``object.
    __delattr__`` before Python 3.11 prints ``AttributeError: _unwrapped_old_generate``)."""
    msg = tb.message.strip()
    if tb.through is None or tb.name != "AttributeError" or not msg.isidentifier():
        return None
    return msg


def through_text(tb: Traceback) -> str:
    """``, through torch's __delattr__ (nn/modules/module.py:2040)`` for a handed-on raise."""
    f = tb.through
    if f is None:
        return ""
    return f", through {f.package}'s {f.function} ({f.at})"
