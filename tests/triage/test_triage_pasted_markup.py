"""Tracebacks pasted through markdown and HTML (issue 36): bold, underscore-bold and code marks
around frames and the exception line, emphasis inside a frame's path, ``> `` quotes,
``<details>`` / ``<pre>`` tags and HTML entities are read as if unquoted (``scanner.unmark``,
applied where every line is cleaned). Each log is synthetic, in the shape of a real paste
(docs/validation/heldout-2026-11-29/logs/004.log for the bold path)."""

from __future__ import annotations

import pytest

from envdoctor.triage.scanner import clean, unmark
from envdoctor.triage.traceback import failure
from tests.triage.helpers import findings, scan_bytes

SP = "/opt/conda/lib/python3.11/site-packages"


@pytest.mark.parametrize(
    ("line", "read"),
    [
        (
            "**TypeError: f() got an unexpected keyword argument 'k'**",
            "TypeError: f() got an unexpected keyword argument 'k'",
        ),
        ("__ValueError: bad value__", "ValueError: bad value"),
        ("`RuntimeError: no`", "RuntimeError: no"),
        ("```ValueError: x```", "ValueError: x"),
        ('> `File "/a/b.py", line 3, in f`', '> File "/a/b.py", line 3, in f'),
        ('> **File "/a/b.py", line 3, in f**', '> File "/a/b.py", line 3, in f'),
        (
            '  File "D:\\env\\site-packages\\**transformers\\utils\\deprecation.py**", line 165, in f',
            'File "D:\\env\\site-packages\\transformers\\utils\\deprecation.py", line 165, in f',
        ),
        (
            'File "/x/site-packages/trl/**init**.py", line 3, in <module>',
            'File "/x/site-packages/trl/__init__.py", line 3, in <module>',
        ),
        (
            "<details><summary>Traceback (most recent call last):</summary>",
            "Traceback (most recent call last):",
        ),
        ("<pre>ValueError: x</pre>", "ValueError: x"),
        ("</details>", ""),
    ],
)
def test_markup_around_a_pasted_line_is_taken_off(line, read):
    assert clean(line.encode()) == read


@pytest.mark.parametrize(
    "line",
    [
        "__init__",  # a dunder alone, not underscore-bold
        "**Error:** KeyError: 'x'",  # bold inside the line: the exception follows it
        "`num_generations` must be divisible by `per_device_train_batch_size`",  # code inside a message
        'File "/a/<frozen importlib._bootstrap>", line 1, in <module>',
        "ValueError: expected <class 'int'>",
        "return func(*args, **kwargs)",
        "`a` and `b`",  # two code spans, not one wrapping the line
    ],
)
def test_a_line_that_only_holds_marks_inside_stays_as_it_is(line):
    assert unmark(line) == line


BOLD_LOG = """\
D:\\Anaconda3\\envs\\x\\python.exe D:/work/dpo_train.py
Traceback (most recent call last):
  File "D:\\work\\dpo_train.py", line 49, in <module>
    trainer = Trainer(model=model, args=args)
  File "D:\\Anaconda3\\envs\\x\\lib\\site-packages\\**transformers\\trainer.py**", line 2000, in train
    return inner_training_loop(
**RuntimeError: Expected all tensors to be on the same device, but found at least two devices!**
"""


def test_a_bold_frame_path_and_exception_line_read_as_unquoted():
    """The frame's package is transformers (not ``**transformers``) and the quoted message has no
    marks left: what logs/004 of set 9 showed ("raised in **transformers (**transformers/…**")."""
    fs = findings(scan_bytes(BOLD_LOG))
    text = " ".join(f.message for f in fs)
    assert fs and "**" not in text
    tb = failure(
        [clean(x.encode()) for x in BOLD_LOG.splitlines()[:-1]], clean(BOLD_LOG.splitlines()[-1].encode())
    )
    assert tb is not None and tb.exc_type == "RuntimeError" and not tb.message.endswith("*")
    assert [f.package for f in tb.frames] == [None, "transformers"]
    assert tb.frames[-1].module_path == "trainer.py"


QUOTED = f"""\
<details><summary>Traceback</summary>

> Traceback (most recent call last):
>   `File "/home/u/train.py", line 12, in <module>`
>     `trainer = GRPOTrainer(model, args=cfg)`
>   **File "{SP}/trl/trainer/grpo_trainer.py", line 420, in __init__**
>     `raise ValueError(&quot;bad&quot;)`
> __ValueError: The global train batch size (3 x 1) must be evenly divisible by the number of \
generations per prompt (8).__

</details>
"""

PLAIN = f"""\
Traceback (most recent call last):
  File "/home/u/train.py", line 12, in <module>
    trainer = GRPOTrainer(model, args=cfg)
  File "{SP}/trl/trainer/grpo_trainer.py", line 420, in __init__
    raise ValueError("bad")
ValueError: The global train batch size (3 x 1) must be evenly divisible by the number of \
generations per prompt (8).
"""


def test_a_quoted_marked_up_traceback_gets_the_plain_ones_answer():
    """Quotes, code marks, bold frames, underscore-bold exception line, HTML entities and a
    ``<details>`` block: the same rules, severities and quoted line as the plain traceback."""
    quoted = findings(scan_bytes(QUOTED))
    plain = findings(scan_bytes(PLAIN))
    assert [(f.rule, f.severity) for f in quoted] == [(f.rule, f.severity) for f in plain]
    assert quoted and all("__" not in f.message.split("“")[-1] for f in quoted)


def test_a_plain_traceback_is_read_as_before():
    fs = findings(scan_bytes(PLAIN))
    assert fs and fs[0].rule == "CFG002"
