"""Python tracebacks as data: the frames (package, file, function, line), the exception and its
message, and the exceptions chained to it, from the lines the scan kept.

It reads what the scanner already holds for a failing line (the line and up to ``CONTEXT_LINES``
lines before it from the same rank), never the log again, so its cost is bounded by those lines
whatever the log's size. The lines are read as people paste them: launcher and vLLM process
prefixes (``[rank3]:``, ``(EngineCore_DP0 pid=7)``, ``(VllmWorker rank=1 pid=9)``,
``(APIServer pid=3)``), vLLM's logger prefix, tqdm residue, markdown quotes (``> ``), code fences,
indentation stripped or not, IPython's ``File ~/x.py:12, in f()`` and Colab's ``[/path.py](…) in
f()`` frames. Chained exceptions ("During handling of the above exception …", "The above exception
was the direct cause …") become ``Traceback.chain``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from envdoctor.triage.callsite import qualify
from envdoctor.triage.raisethrough import hand_on
from envdoctor.triage.scanner import split_prefix, unmark
from envdoctor.triage.traceback_model import Frame, Traceback

MAX_LINES = 400  # lines of one failure looked at (the scanner keeps at most 41)
MAX_FRAMES = 200

#: fine-tuning frameworks run from a source checkout as often as installed: a frame of one
#: (``LLaMA-Factory/src/llamafactory/train/dpo/trainer.py``) is the framework's code, never the
#: user's own (TRI032's "your code"); their names recur as folders of other packages
#: (``swift/megatron/``, ``verl/utils/megatron/``), which ``package_of`` leaves to those
_FRAMEWORKS = {
    "llamafactory": "llamafactory",
    "llmtuner": "llmtuner",  # LLaMA-Factory before its rename
    "axolotl": "axolotl",
    "lmflow": "lmflow",
    "xtuner": "xtuner",
    "torchtune": "torchtune",
    "trlx": "trlx",
    "nemo_aligner": "nemo-aligner",
    "megatron": "megatron",
    "sglang": "sglang",
    "prime_rl": "prime-rl",
    "slime": "slime",
    "open_instruct": "open-instruct",
}

#: import name (a path component) -> distribution name, for the packages of the GRPO stack and the
#: wrappers users run TRL through; any other package under site-packages is named as it is
PACKAGES = {
    "trl": "trl",
    "transformers": "transformers",
    "vllm": "vllm",
    "vllm_ascend": "vllm-ascend",  # vLLM's Ascend NPU plugin, which TRL imports on NPUs
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
    "peft": "peft",
    "liger_kernel": "liger-kernel",
    "flash_attn": "flash-attn",
    "torch": "torch",
    "unsloth": "unsloth",
    "unsloth_zoo": "unsloth-zoo",
    "verifiers": "verifiers",
    "datasets": "datasets",
    "bitsandbytes": "bitsandbytes",
    "xformers": "xformers",
    "flashinfer": "flashinfer-python",
    "open_r1": "open-r1",
    # RL stacks on vLLM with their own trainers, weight sync and sleep-mode code
    "openrlhf": "openrlhf",
    "verl": "verl",
    "nemo_rl": "nemo-rl",
    "swift": "ms-swift",
    "skyrl_train": "skyrl-train",
    "pipelinerl": "pipelinerl",
    "rllm": "rllm",
    "realhf": "areal",
    "areal": "areal",
    "lighteval": "lighteval",
    "lm_eval": "lm-eval",
    **_FRAMEWORKS,
}

_FRAME = re.compile(
    r'^File "(?P<path>[^"]{1,1000})", line (?P<line>\d{1,9})(?:, in (?P<func>[^\s(]{1,200}))?'
)
#: a frame whose ``File "`` a paste cut off, its path marked as cut (``…/site-packages/x/y.py", line 3,
#: in f``, ``./a/b.py", …``); a bare ``/trl/x.py", …`` is left alone (the head of an excerpt)
_CUT_FRAME = re.compile(
    r'^(?P<path>(?:\.{1,3}|…)/[^"\s]{0,1000}\.py)", line (?P<line>\d{1,9}), in (?P<func>[^\s(]{1,200})$'
)
#: IPython / Jupyter: ``File ~/x.py:399, in Trainer.train(self)``, ``File /a/b.py:12, in f()``,
#: on Windows ``File e:\\envs\\x\\Lib\\site-packages\\trl\\x.py:12, in f()`` (a drive before the path)
_IPY_FRAME = re.compile(
    r"^File (?P<path>(?:[A-Za-z]:[\\/])?[~/.\w][^\s:]{0,1000}\.py):(?P<line>\d{1,9}), "
    r"in (?P<func>[\w.<>]{1,200})"
)
#: Colab: ``[/usr/local/lib/python3.11/dist-packages/unsloth_zoo/vllm_utils.py](https://…) in f()``
_COLAB_FRAME = re.compile(r"^\[(?P<path>/[^\]\s]{1,1000}\.py)\]\([^)]{0,300}\) in (?P<func>[\w.<>]{1,200})")
#: IPython before 8 (old Colab): ``/usr/lib/python3/dist-packages/trl/x.py in f(self, a)``, its
#: line and code on the ``--> 982     code`` line below, among numbered context lines
_IPY_OLD_FRAME = re.compile(
    r"^(?P<path>[~/][^\s]{0,1000}\.py) in (?P<func><cell line: \d{1,9}>|[\w.<>]{1,200})(?:\(|$)"
)
#: pytest's report: ``tests/gpu/utils.py:18: in <module>``, ``…/site-packages/x/y.py:2305: in f``,
#: the code on the indented line below (a test's own line, ``tests/x.py:218:``, names no function)
_PYTEST_FRAME = re.compile(
    r"^(?P<path>[^\s:\"]{1,1000}\.py):(?P<line>\d{1,9}):(?: in (?P<func>[\w.<>]{1,200}))?$"
)
#: IPython 8's notebook cell (Jupyter): ``Cell In[3], line 1``; its code on the ``----> 1 …`` line
_IPY_CELL = re.compile(
    r"^Cell (?P<path>In ?\[\d{1,9}\]), line (?P<line>\d{1,9})(?:, in (?P<func>\S{1,200}))?"
)
_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_][\w]{0,100}\.){0,8}[A-Z]\w{0,100}(?:Error|Exception|Interrupt|Exit|Warning)"
    r"|NotImplementedError|StopIteration|KeyError|AssertionError|Exception"
    r"|(?:[A-Za-z_]\w{0,100}\.){0,8}InvalidVersion)"  # packaging's, not named ...Error
    r"(?::(?: (?P<message>.{0,2000}))?)?$"
)
#: an exception named inside a line of prose or markup (the failing line only): "I get `TypeError:
#: f() got …` when …", "报错：ValueError：…" (a full-width colon), "**Error:** KeyError: 'x'"
_INLINE_EXCEPTION = re.compile(
    r"(?:^|[\s`'\"(*：:])(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,8}[A-Z]\w{0,100}(?:Error|Exception))"
    r"[:：] ?(?P<message>[^`\n]{1,2000})"
)
#: IPython's listing under a frame: context lines ``551     pass``, the frame's line ``--> 554 x()``
#: (which also gives the line of a frame that names none: IPython before 8, Colab's links)
_IPY_ARROW = re.compile(r"^-{0,8}> {0,4}(?P<line>\d{1,9})\s{1,80}(?P<code>.{0,300})")
_IPY_LISTING = re.compile(r"^\d{1,9} {2,80}\S")
_CAUSE = "The above exception was the direct cause of the following exception"
_CONTEXT = "During handling of the above exception, another exception occurred"
_FENCE = re.compile(r"^(?:```|~~~)")
_QUOTE = re.compile(r"^(?:>\s?){1,8}")
_MARKERS = ("^^^", "~~~", "...")


#: folders in which a package keeps its copy of another one's code (``verl/third_party/vllm``)
_VENDORED = frozenset({"third_party", "thirdparty", "_vendor", "vendor", "vendored"})


_PYTHON_DIR = re.compile(r"python\d(?:\.\d{1,3})?t?$")


def package_of(path: str) -> tuple[str | None, str]:
    """The distribution a frame's file belongs to and the path inside it: from the
    ``site-packages`` / ``dist-packages`` part of the path, else from a path component that is
    a package of the stack whose layout has what follows it (a source checkout:
    ``…/trl/trl/trainer/grpo_trainer.py``, ``_in_layout``); ``None`` for the user's code (a folder
    of the user's project named like a package: ``research/trl/train_trl_grpo.py``) and Python's
    own modules (``<frozen importlib._bootstrap>``)."""
    p = path.replace("\\", "/")
    if p.startswith("<"):
        return None, p
    parts = [x for x in p.split("/") if x]
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            rest = parts[i + 1 :]
            if len(rest) >= 2:
                name = rest[0]
                if name.endswith(".egg") or "-" in name:  # vllm-0.10.1.dev73+g…-py3.12-linux.egg/vllm/…
                    rest = rest[1:]
                    name = rest[0] if rest else name
                if len(rest) >= 2:
                    return PACKAGES.get(name, name.lower().replace("_", "-")), "/".join(rest[1:])
            return None, p
    if any(
        x in ("lib", "lib64") and i + 1 < len(parts) and _PYTHON_DIR.match(parts[i + 1]) or x == "Lib"
        for i, x in enumerate(parts)
    ):  # Python's own modules (…/envs/vllm/lib/python3.10/asyncio/…: the env's name is no package)
        return None, p
    for i in range(len(parts) - 2, -1, -1):  # the last component that is a stack package
        if i > 0 and parts[i - 1] in _VENDORED:  # verl/third_party/vllm/…: verl's own code
            continue
        if parts[i] in PACKAGES and parts[i] not in ("open_r1",) and i + 1 < len(parts):
            if not _in_layout(parts[i], parts[i + 1]):
                continue  # a folder of the user's project named like the package
            if parts[i] in _FRAMEWORKS and any(
                x in PACKAGES and _in_layout(x, parts[j + 1]) for j, x in enumerate(parts[:i])
            ):
                continue  # a framework's name as a folder of another package (ms-swift's megatron/)
            return PACKAGES[parts[i]], "/".join(parts[i + 1 :])
    return None, p


def _in_layout(name: str, first: str) -> bool:
    """Whether the package imported as ``name`` has, at some release its symbol history reads
    (rules/knowledge/symbols/), the module or subpackage ``first`` (the path's part after the
    package's folder: ``trainer``, ``import_utils.py``); True where envdoctor has no history of it
    (its layout is not known, the path decides)."""
    from envdoctor.knowledge.symbol_history import history

    h = history(PACKAGES[name])
    if h is None:
        return True
    module = first.split(".", 1)[0]  # a module's file (``utils.py``, ``_C.pyx``) or a folder
    return module == "__init__" or h.module(f"{name}.{module}") != 0


#: the folders of a checkout that hold a user's scripts, not an importable package
_FOLDERS = frozenset(
    {"src", "scripts", "examples", "tests", "test", "tools", "bin", "lib", "code", "notebooks"}
)


def _trimmed(frames: list[Frame]) -> list[Frame]:
    """Frames whose paths the paster cut to the package (``vllm/entrypoints/llm.py``,
    ``openrlhf/trainer/ray/vllm_engine.py``): where a relative path names a stack package, the
    other relative paths of the traceback were cut the same way and name theirs by their first
    folder (a script run from a checkout, ``examples/train.py``, stays the user's code)."""
    relative = [f for f in frames if f.path[:1] not in "/~.<\\" and ":" not in f.path[:3]]
    if not any(f.package in PACKAGES.values() for f in relative):
        return frames
    out = []
    for f in frames:
        parts = f.path.replace("\\", "/").split("/")
        first = parts[0]
        named = len(parts) >= 2 and first.isidentifier() and first not in _FOLDERS
        if f.package is None and f in relative and named:
            name = PACKAGES.get(first, first.lower().replace("_", "-"))
            f = Frame(name, f.path, "/".join(parts[1:]), f.function, f.line, f.code)
        out.append(f)
    return out


_RAY_REPEATED = re.compile(r" ?\[repeated \d{1,9}x across cluster\]$")


#: a word processor's or a blog's typographic quotes, as Python prints them (``‘X’ object has no
#: attribute ‘a’``, ``File “/x.py”, line 3``); NFKC leaves them as they are
_SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _body(text: str) -> str:
    """A pasted line as the program printed it: prefixes, quotes, markup and indentation removed;
    typographic quotes read as Python's own."""
    text = unmark(text.strip().translate(_SMART_QUOTES))
    if ".init()" in text or ".call()" in text or ".post_init()" in text:
        text = _LOST_DUNDER.sub(r"\1.__\2__()", text)
    body = split_prefix(text)[0] if text[:1] in "[(<E>WIDCRr0123456789 \t*`" else text
    if body.endswith("across cluster]"):  # Ray's "… [repeated 7x across cluster]"
        body = _RAY_REPEATED.sub("", body)
    body = _QUOTE.sub("", body.strip())
    for _ in range(2):  # a prefix inside a quote, a quote inside a prefix
        stripped = split_prefix(body)[0].strip() if body[:1] in "[(" else body
        if stripped == body:
            break
        body = _QUOTE.sub("", stripped)
    return body.strip()


#: a dunder whose underscores markdown took for bold marks and dropped: ``Seq2SeqTrainingArguments.
#: init() got an unexpected keyword argument`` is Python's ``….__init__() got …`` (a class's call
#: message: only before the words Python's TypeError puts there)
_LOST_DUNDER = re.compile(
    r"\b([A-Z]\w{0,200})\.(init|call|post_init)\(\)"
    r"(?= (?:got an unexpected keyword|got multiple values|missing \d+ required|takes (?:from )?\d+))"
)
#: a dunder that markdown rendered bold: ``**init**`` for ``__init__``
_BOLD_DUNDER = re.compile(r"\*\*(\w{1,100})\*\*")
#: where a pasted line holds several lines that lost their line breaks: before each frame, and
#: before each rank's prefix where it recurs (``[rank0]:   File "…", line 1, in f [rank0]:     x()``)
_JOINED_FRAME = re.compile(r'\s(?=File "[^"\n]{1,1000}", line \d)')
_JOINED_RANK = re.compile(r"\s(?=\[rank\d{1,6}\]:\s)")


#: a process's prefix (vLLM's engine and workers, Ray's actors): ``(EngineCore_DP0 pid=7)``,
#: ``(VllmWorker rank=1 pid=9)``
_PID = re.compile(r"\s{0,40}\((?:[\w.-]{1,100}(?:\[rank=\d{1,6}\])? )?(?:rank=\d{1,6} )?pid=(\d{1,10})[,)]")


def _one_process(items: list[str]) -> list[str]:
    """Where processes interleave their lines (an engine core's traceback and a worker's), the
    lines of the failing line's process (and those without a process's prefix) when that process
    printed a traceback's header of its own; else all (one process's traceback that goes on in
    the lines of another it called, as vLLM's engine core shows its worker's)."""
    last = _PID.match(items[-1]) if items else None
    if last is None:
        return items
    pids = [_PID.match(item) for item in items]
    own = [item for item, m in zip(items, pids, strict=True) if m is None or m.group(1) == last.group(1)]
    return own if any("Traceback (most recent call last)" in item for item in own) else items


def _unjoin(items: list[str]) -> list[str]:
    """``items`` with each line that holds several joined lines split into them."""
    out: list[str] = []
    for item in items:
        if item.count('File "') >= 2 or item.count("[rank") >= 2:
            ranked = item.count("[rank") >= 2
            pieces = _JOINED_RANK.split(item) if ranked else _JOINED_FRAME.split(item)
            out.extend(p for p in pieces[-MAX_LINES:] if p.strip())  # the last: the exception
        else:
            out.append(item)
    return out[-MAX_LINES:]


#: a frame's line that a terminal or a paste wrapped: ``File`` alone, or ``File "path",`` (and
#: ``File "path", line``), its rest on the next line or two
_WRAPPED_FRAME = re.compile(r'^File(?: "[^"\n]{1,1000}",?(?: line)?)?$')


def _rewrap(items: list[str]) -> list[str]:
    """``items`` with each frame line that a wrap broke over two or three lines joined again,
    where the joined text reads as one frame (``File "/x/memmap.py",`` then ``line 25, in <module>``)."""
    out: list[str] = []
    i = 0
    while i < len(items):
        body = _body(items[i]) if "File" in items[i] else ""
        if body.startswith("File") and _WRAPPED_FRAME.match(body):
            joined, taken = body, 0
            for j in (i + 1, i + 2):
                if j >= len(items):
                    break  # the log ends here: the line stays as it is
                joined = f"{joined} {_body(items[j])}"
                if _FRAME.match(joined):
                    taken = j + 1 - i
                    break
            if taken:
                out.append(joined)
                i += taken
            else:
                out.append(items[i])
                i += 1
            continue
        out.append(items[i])
        i += 1
    return out


def _frame(body: str) -> Frame | None:
    m = _FRAME.match(body) or _IPY_FRAME.match(body) or _COLAB_FRAME.match(body)
    if m is None and '", line ' in body:
        m = _CUT_FRAME.match(body)
    if m is None and " in " in body:
        m = _IPY_OLD_FRAME.match(body)
    if m is None and body.startswith("Cell In"):
        m = _IPY_CELL.match(body)
    if m is None and ".py:" in body:
        m = _PYTEST_FRAME.match(body)
    if m is None:
        return None
    path = m.group("path")
    if "**" in body:
        path = _BOLD_DUNDER.sub(r"__\1__", path)
    package, module_path = package_of(path)
    line = int(m.group("line")) if "line" in m.groupdict() and m.group("line") else 0
    func = m.group("func") or ""
    return Frame(
        package, path, module_path, _BOLD_DUNDER.sub(r"__\1__", func) if "**" in func else func, line
    )


def parse(lines: Iterable[str], last_line_no: int = 0) -> list[Traceback]:
    """The tracebacks in ``lines`` (a failing line's context and the line itself), in order; the
    last line is numbered ``last_line_no`` (its exception gets that number; earlier ones 0)."""
    out: list[Traceback] = []
    current: Traceback | None = None
    pending_chain: str = ""
    awaiting_code = False
    items = _rewrap(_unjoin(_one_process(list(lines)[-MAX_LINES:])))
    for i, raw in enumerate(items):
        body = _body(raw)
        if not body or _FENCE.match(body):
            continue
        if _CAUSE in body or _CONTEXT in body:
            pending_chain = "direct cause" if _CAUSE in body else "during handling"
            current = None
            continue
        if "Traceback (most recent call last)" in body:
            current = Traceback(cause=pending_chain)
            if pending_chain and out:
                current.chain = [*out[-1].chain, out[-1]]
                out.pop()
            pending_chain = ""
            awaiting_code = False
            continue
        frame = _frame(body)
        if frame is not None:
            if current is None or current.exc_type:
                current = Traceback()
                awaiting_code = False
            if len(current.frames) < MAX_FRAMES:
                current.frames.append(frame)
            awaiting_code = True
            continue
        exc = _EXCEPTION.match(body)
        if exc is None and i == len(items) - 1 and current is None:
            exc = _INLINE_EXCEPTION.search(body[:4000])  # the failing line, in prose or markup
            if exc is not None and "warn" in raw[: max(raw.find(exc.group("type")), 0)].lower():
                exc = None  # a warning that names an exception ("Failed to import …: ImportError …")
        if exc is not None and (current is not None or i == len(items) - 1):
            tb = current if current is not None else Traceback()
            tb.exc_type = exc.group("type")
            tb.message = (exc.group("message") or "").strip().rstrip("`*").strip()
            tb.line_no = last_line_no if i == len(items) - 1 else 0
            if tb not in out:
                out.append(tb)
            current = None
            awaiting_code = False
            continue
        arrow = _IPY_ARROW.match(body) if current is not None and current.frames else None
        if current is not None and arrow is not None:
            # IPython's listing marks the frame's own line: ``--> 554  outputs = f(x)``
            last = current.frames[-1]
            line = last.line or int(arrow.group("line"))
            current.frames[-1] = Frame(
                last.package, last.path, last.module_path, last.function, line, arrow.group("code").strip()
            )
            awaiting_code = False
            continue
        if current is not None and awaiting_code and current.frames and not body.startswith(_MARKERS):
            last = current.frames[-1]
            if _IPY_LISTING.match(body):  # IPython's numbered context lines: the arrow's line follows
                continue
            current.frames[-1] = Frame(
                last.package, last.path, last.module_path, last.function, last.line, body[:300]
            )
            awaiting_code = False
    if current is not None and current.frames and current not in out:
        out.append(current)  # frames whose exception line is not among the lines (cut off)
    for tb in out:
        tb.frames = _trimmed(tb.frames)
    return out


#: Python's own messages, whose shape names their exception where a log quotes them without it
#: ("Trainer.compute_loss() got an unexpected keyword argument 'x'" is a TypeError's)
_BARE = (
    (re.compile(r"[\w.<>]{1,200}\(\) got an unexpected keyword argument '"), "TypeError"),
    (
        re.compile(
            r"[\w.<>]{1,200}\(\) takes [\w ]{1,40} positional arguments? but \d{1,3} (?:were|was) given"
        ),
        "TypeError",
    ),
    (
        re.compile(r"[\w.<>]{1,200}\(\) missing \d{1,3} required (?:positional|keyword-only) argument"),
        "TypeError",
    ),
    (re.compile(r"cannot import name '[\w.]{1,200}' from '?[A-Za-z_]"), "ImportError"),
    (re.compile(r"module '[\w.]{1,300}' has no attribute '"), "AttributeError"),
)
#: an object's missing attribute quoted without its class and, in a retyped paste, without the
#: quotes Python writes ("DataParallel object has no attribute 'config'")
_BARE_OBJECT = re.compile(
    r"(?<![\w'])'?(?P<cls>[A-Za-z_]\w{0,100})'? object has no attribute '?(?P<attr>[A-Za-z_]\w{0,200})'?"
)


def bare_exception(tb: Traceback) -> bool:
    """Name the exception of ``tb`` whose message is quoted without it, from Python's message
    shape (``_BARE``); the message then starts where the shape does. Whether it was named."""
    if tb.exc_type:
        return False
    for shape, exc in _BARE:
        found = shape.search(tb.message[:8192])
        if found is not None:
            tb.exc_type = exc
            tb.message = tb.message[found.start() :].strip().rstrip('`*"').strip()
            return True
    obj = _BARE_OBJECT.search(tb.message[:8192])
    if obj is not None:  # written as Python writes it, whatever quotes the paste kept
        tb.exc_type = "AttributeError"
        tb.message = f"'{obj.group('cls')}' object has no attribute '{obj.group('attr')}'"
        return True
    return False


def failure(context: Sequence[str], text: str, line_no: int = 0) -> Traceback | None:
    """The traceback that ends at a failing line ``text`` (with its ``context``): the last one,
    whose exception is the line's own; None when the lines hold no frame and no exception."""
    found = parse([*context, text], line_no)
    if not found:
        bare = Traceback(message=_body(text), line_no=line_no)
        return bare if bare_exception(bare) else None  # Python's message without its exception
    last = found[-1]
    if not last.exc_type:  # the failing line is not shaped "Type: message" (a bare message)
        last.message = _body(text)
        bare_exception(last)  # Python's message without its exception's name
    for tb in last.all():  # a constructor's error that names no class (Python < 3.10): its call's line does
        qualify(tb)
        hand_on(tb)  # an attribute hook's raise: the frame that asked is the site
    return last
