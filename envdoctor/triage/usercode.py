"""Failures raised inside the user's or a project's own code, told from a traceback's structure.

A traceback whose innermost frames are the user's code (no package's file: ``boundary._user``)
was raised there: the exception's line is in that code, whatever called it. Where a package's frame
called that code (TRL's reward loop calling a reward function, transformers calling a callback or
``compute_metrics``, a DataLoader calling a collator, ``datasets`` calling a map function), the
package called the user back, and the cause is in that function or in the data the package gave
it — not in the package (TRI032, an error: the traceback shows it). A traceback of the user's
frames alone says the same of the user's code where the function's own name says its role (a
reward function); of no known role it is left to the first exception's answer (TRI003), which
names the user's frame where it was raised.

Not the user's code: an exception raised in a package's frame (a user frame only *above* the
package's frames called into it), a call or an import that does not fit a package (a call's shape
raises in the caller's frame: API drift, ``boundary.py``), an attribute of a package's object, and
failures of the machine (CUDA, NCCL, memory, files, the network), which other rules read.

Also here (TRI033): a reshape by ``num_generations`` (``x.view(n, self.num_generations)``, GRPO's
grouping of rewards or completions) of a tensor whose size is not a multiple of it: a batch with
fewer rows than the sampler's groups (the epoch's last, short batch), told by the frame's own line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envdoctor.findings import Finding, Severity
from envdoctor.triage import boundary
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Frame, Traceback

#: exceptions a bug of the code or its data raises (not the machine's: CUDA, files, the network)
_CODE = frozenset(
    ("ValueError", "TypeError", "KeyError", "IndexError", "AttributeError", "ZeroDivisionError")
    + ("AssertionError", "NameError", "UnboundLocalError", "JSONDecodeError", "RuntimeError")
    + ("StopIteration", "RecursionError", "UnicodeDecodeError", "OverflowError")
)
#: messages of the machine or of a package's state, whatever frame raised them
_MACHINE = re.compile(
    r"CUDA|cuda|NCCL|nccl|cuDNN|cublas|CUBLAS|out of memory|device-side|[Dd]evice|HIP|ROCm|"
    r"[Ss]egmentation|[Kk]illed|[Tt]imed? ?out|[Cc]onnection|[Ss]ocket|[Pp]ermission|"
    r"No such file|Disk|disk|[Ss]hared memory|/dev/shm|\bRay\b"
)
#: packages that run a function without a contract about what it does (an executor, a launcher):
#: the function they ran is the user's program, not a callback of theirs
_EXECUTORS = frozenset(
    ("ray", "hydra", "hydra-core", "accelerate", "fire", "click", "typer", "multiprocess", "joblib")
    + ("absl", "absl-py", "deepspeed", "torch", "submitit", "tyro", "jsonargparse", "debugpy", "pydevd")
)
#: a reward function by its name, or a package's line that calls one
_REWARD = re.compile(r"reward", re.IGNORECASE)


@dataclass(frozen=True)
class Role:
    """What the package called the user's function as, and what to fix in it."""

    name: str  # "reward function", "data collator", ...
    fix: str


#: a message of code that read a conversational completion (a list of message dicts) as a string,
#: or a standard one (a string) as messages
_SHAPE_MIXUP = re.compile(
    r"'(?:list|dict)' object has no attribute '(?:strip|split|lower|replace|startswith|find|endswith)'|"
    r"string indices must be integers|list indices must be integers or slices, not str|"
    r"expected string or bytes-like object"
)


def _role(caller: Frame | None, func: str, log: Log, message: str = "") -> Role | None:
    """The role of the user's function ``func`` that ``caller`` (a package's frame, or None: no
    package frame is shown) called, from the frame's function and line and the function's name;
    ``message``: the exception's (a reward function that read a completion in the other format)."""
    code, where = (caller.code, caller.function) if caller is not None else ("", "")
    pkg = caller.package if caller is not None else None
    mod = caller.module_path if caller is not None else ""
    if _REWARD.search(func) or _REWARD.search(code) or _REWARD.search(where) or _REWARD.search(mod):
        if pkg not in (None, "trl", "unsloth", "unsloth-zoo", "open-r1", "verifiers"):
            return Role(
                "reward function",
                f"fix {func}: {pkg} calls it for every response of a batch and needs a score for each; "
                "parse the response defensively (the model's text is free-form: guard the casts, the regex "
                "matches, the fields that may be None) and give a response it cannot parse the lowest score",
            )
        trl = log.versions.get("trl")
        old = trl is not None and trl.exact and _below(trl.version, "0.16.0")
        none = (
            f"return 0.0 for a completion it cannot score (TRL {trl.version if trl else ''} does not "
            "accept None rewards; TRL 0.16.0 and later do, and leave that completion out of the function's "
            "reward)"
            if old
            else "return None for a completion it cannot score (TRL accepts None rewards from 0.16.0 and "
            "leaves that completion out of the function's reward; 0.0 on older releases)"
        )
        shape = (
            "; the message is that of a completion read in the other format: TRL passes each completion "
            "as a string for a standard dataset and as a list of messages ([{'role': 'assistant', "
            "'content': …}], read completion[0]['content']) for a conversational one (a 'prompt' column of "
            "messages)"
            if _SHAPE_MIXUP.search(message)
            else ""
        )
        return Role(
            "reward function",
            f"fix {func}: it must return one float per completion for every batch it is given; parse the "
            f"completion defensively (the model's text is free-form: guard the int()/float() casts, the "
            f"regex matches, the columns that may be None) and {none}{shape}",
        )
    if pkg is None:
        return None
    if where == "call_event" or mod.endswith("trainer_callback.py"):
        return Role(
            "TrainerCallback",
            f"fix the callback's {func}: transformers calls it with the "
            "trainer's args, state and control and the objects of that event",
        )
    if "compute_metrics" in code or where in ("evaluation_loop", "prediction_loop"):
        return Role(
            "compute_metrics function",
            f"fix {func}: it receives an EvalPrediction "
            "(predictions, label_ids, as numpy arrays; logits unless preprocess_logits_for_metrics)",
        )
    if "collate" in code or "collate" in where or mod.endswith(("data/_utils/fetch.py", "data_collator.py")):
        return Role(
            "data collator",
            f"fix {func} or the rows it was given: the collator gets a list of "
            "the dataset's rows (check their columns, types and lengths)",
        )
    if pkg == "datasets" or "formatting_func" in code or "map(" in code:
        return Role(
            "dataset function (map / filter / formatting)",
            f"fix {func} or the rows it fails on "
            "(a row with a missing or None field, another type, an empty list)",
        )
    return None  # another call (torch running a module's forward: the program itself)


def _below(version: str, floor: str) -> bool:
    from envdoctor import versions

    return bool(versions.below(version, floor))


def _frame_text(f: Frame) -> str:
    name = f.path.replace("\\", "/").rsplit("/", 1)[-1] if f.package is None else f.module_path
    where = f"{name}:{f.line}" if f.line else name
    return f"{where}{' in ' + f.function if f.function else ''}"


def _package_object(msg: str) -> bool:
    """An AttributeError of an object whose class a package owns (API drift's, not the user's)."""
    m = boundary._OBJECT_ATTR.search(msg)
    if m is None:
        return False
    obj = m.group("obj").rsplit(".", 1)[-1]
    if obj in ("NoneType", "str", "dict", "list", "tuple", "int", "float", "bool", "bytes", "set"):
        return False
    return boundary._object_package(obj) is not None or boundary._trl_trainer(obj) is not None


def _own_fault(tb: Traceback) -> bool:
    """The exception is a bug of code or its data (``_CODE``), not a failure of the machine, not
    a call, an import or an attribute that does not fit a package (API drift)."""
    if tb.name not in _CODE or _MACHINE.search(tb.message[:2000]):
        return False
    if tb.name == "TypeError" and boundary._CALL.search(tb.message):
        return False  # a call's shape raises in the caller's frame: whose function is called decides
    drift = boundary._MODULE_ATTR.search(tb.message) or _package_object(tb.message)
    return not (tb.name == "AttributeError" and drift)


def _mine(f: Frame) -> bool:
    """A frame of the user's code: a file of no package (``boundary._user``), a notebook's cell."""
    return boundary._user(f) or f.path.startswith("<ipython-input")


def raised_in_user_code(tb: Traceback) -> tuple[list[Frame], Frame | None] | None:
    """The innermost run of the user's frames where ``tb`` was raised (Python's own frames after
    it allowed: ``json``'s decoder under the user's ``json.loads``) and the package's frame that
    called into that run (None: the traceback shows no package's frame before it); None where
    the innermost frame that is not Python's own is a package's (raised in the package)."""
    frames = tb.frames
    j = len(frames)
    while j > 0 and frames[j - 1].package is None and not _mine(frames[j - 1]):
        j -= 1  # Python's own frames (<frozen …>, /usr/lib/python3.x/…) under the user's code
    i = j
    while i > 0 and _mine(frames[i - 1]):
        i -= 1
    if i == j:
        return None  # raised in a package's frame
    k = i - 1
    while k >= 0 and frames[k].package is None and not _mine(frames[k]):
        k -= 1  # Python's own frames between (a thread pool running the package's call)
    caller = frames[k] if k >= 0 and frames[k].package is not None else None
    return frames[i:j], caller


def user_code(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI032: ``tb`` raised in the user's code, called back by a package or run by the user's
    own frames (module docstring)."""
    if not tb.frames or not tb.exc_type or not _own_fault(tb):
        return None
    found = raised_in_user_code(tb)
    if found is None:
        return None
    run, caller = found
    entered, innermost = run[0], run[-1]
    role = _role(caller, entered.function or innermost.function, log, tb.message)
    if role is None and caller is not None and caller.package in _EXECUTORS:
        caller = None  # ray, a launcher, torch running a module: ran the user's program, no contract
    if role is None and caller is None:
        # the user's frames alone: a reward function deeper in them may say the role
        named = next((f for f in reversed(run) if _REWARD.search(f.function)), None)
        if named is not None:
            entered = named
            role = _role(None, named.function, log, tb.message)
    layout = _trl_layout(run, caller, tb, m, log)
    if layout is not None:
        return layout
    if caller is None and role is None:
        return None  # the user's frames alone, of no known role: the first exception's answer (TRI003)
    func = entered.function or "the function"
    exc = f"{tb.name}: {tb.message[:200]}" if tb.message else tb.name
    where = _frame_text(innermost)
    what_role = f"your {role.name} {func}()" if role else f"your function {func}()"
    if caller is not None:
        what = (
            f"{exc} was raised inside your code, in {what_role} ({where}), which {caller.package} called "
            f"back from {_frame_text(caller)}: the cause is in that function or in the data {caller.package} "
            f"gave it, not in {caller.package}"
        )
    else:
        at = next(i for i, f in enumerate(run) if f is entered)
        above = run[at - 1] if at > 0 else None
        what = (
            f"{exc} was raised inside your own code, in {what_role} ({where})"
            + (
                f", called from your {above.function or 'code'}"
                if above is not None and above.function
                else ""
            )
            + ": the traceback shows no package's frame, the exception is raised in that code: the cause is "
            "in it or in the data it was given"
        )
    fix = (
        role.fix
        if role
        else f"fix {func} ({where}) or its input: the exception is raised on that line of your code; "
        "print the values it was given there (the message names the one that failed)"
    )
    fix += "; if the code is a project's you run (not yours), update it to the project's latest version"
    d = finding(
        "TRI032",
        [m],
        log,
        what,
        fix,
        raised_in=where,
        called_by=_frame_text(caller) if caller is not None else None,
        role=role.name if role else None,
    )
    # the traceback shows the package calling the user's function, or the function's own name says
    # its role: the exception's line is in that code, certain
    f = d.finding
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


#: torch's message of a view / reshape whose shape does not hold the tensor's elements
_SHAPE = re.compile(
    r"shape '\[(?P<dims>-?\d{1,9}(?:, ?-?\d{1,9}){0,7})\]' is invalid for input of size (?P<n>\d{1,15})"
)
_GROUPED = re.compile(r"\.(?:view|reshape)\((?P<args>[^()]{0,200}num_generations[^()]{0,200})\)")


def grouped_reshape(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI033: the innermost frame groups a tensor by ``num_generations`` and the tensor's size is
    not a multiple of the group: a batch with fewer rows than whole groups reached it."""
    if tb.name != "RuntimeError" or not tb.frames:
        return None
    shape = _SHAPE.search(tb.message)
    last = tb.frames[-1]
    call = _GROUPED.search(last.code) if shape is not None else None
    if shape is None or call is None:
        return None
    dims = [int(x) for x in shape.group("dims").split(",")]
    n = int(shape.group("n"))
    group = dims[-1] if dims[-1] > 0 and call.group("args").rstrip().endswith("num_generations") else None
    whole = 1
    for dim in dims:
        whole *= dim if dim > 0 else 1
    if group is None or n % group == 0 and (-1 in dims or n == whole):
        return None  # the size fits whole groups: not a short batch
    own = last.package is None
    short = f"a multiple of {group}" if n % group else f"the {whole} the shape holds"
    who = "your (the project's) trainer" if own else f"{last.package}'s trainer"
    what = (
        f"{who} groups {n} values by num_generations={group} ({_frame_text(last)}: "
        f"{last.code.strip()[:120]}), but {n} is not {short}: "
        "a batch with fewer rows than whole groups reached it — the epoch's last batch, short because the "
        "dataset's size is not a multiple of the global batch (the sampler repeats each prompt "
        "num_generations times and does not drop an incomplete batch)"
    )
    fix = (
        "drop the incomplete last batch (dataloader_drop_last: true in the training arguments) or make the "
        "number of training rows a multiple of the global batch (per_device_train_batch_size × processes × "
        "gradient_accumulation_steps, in prompts × num_generations)"
    )
    d = finding("TRI033", [m], log, what, fix, raised_in=_frame_text(last), group=group, size=n)
    # a fork's trainer (the user's frame) has no guard against it: certain; TRL's own sampler drops
    # incomplete batches, so in TRL's frame another cause may have shortened the batch: likely
    f = d.finding
    d.finding = Finding(f.rule, Severity.ERROR if own else Severity.WARNING, f.message, f.fix, f.evidence)
    return d


#: a reward function's own report of an exception it caught: ``Error in accuracy_reward: …``
_CAUGHT = re.compile(
    r"^\W{0,8}(?:Error|Exception|Failed|Failure)\s(?:in|calling|computing|running)\s`?"
    r"(?P<func>\w{0,80}reward\w{0,80})`?(?:\(\))?\s?[:：-]\s?(?P<msg>\S.{0,600})$",
    re.IGNORECASE,
)
MAX_CAUGHT_LINES = 20000


def caught_in_reward(head: bytes, log: Log) -> Draft | None:
    """TRI032 as a warning: a line in which a reward function reports an exception it caught
    (``Error in _correctness_reward_func: invalid literal for int() …``, the convention
    ``print(f"Error in {func.__name__}: {e}")``) and no traceback: not a crash — the function's
    except branch scored that completion — but a completion its parsing did not expect."""
    if not head or b"reward" not in head.lower():
        return None
    text = head.decode("utf-8", errors="replace")
    for line_no, line in enumerate(text.split("\n")[:MAX_CAUGHT_LINES], 1):
        if "reward" not in line.lower() or len(line) > 2000:
            continue
        found = _CAUGHT.match(line.strip())
        if found is None:
            continue
        func, msg = found.group("func"), found.group("msg").strip()
        what = (
            f"your reward function {func} caught an exception on a completion and printed it (line "
            f"{line_no}): “{msg[:300]}” — not a crash: the run goes on, and that completion gets what the "
            "function's except branch returns; the model's text was not what the function parses"
        )
        fix = (
            f"make {func} parse the completions the model writes (the message shows the value it failed on), "
            "and return None for one it cannot score (TRL accepts None rewards from 0.16.0) rather than a "
            "silent 0.0, if such completions should not count; nothing to fix where a zero reward is meant"
        )
        ev = {"line": line_no, "function": func, "caught": True}
        return Draft(line_no, Finding("TRI032", Severity.WARNING, what, fix, ev))
    return None


#: TRL's GRPOTrainer.compute_loss got the dataset's rows (a list of dicts) up to 0.14 and the dict
#: that _prepare_inputs builds (prompt_ids, completion_ids, advantages, …) from 0.15: an override
#: written for one layout indexes the other's
_AS_ROWS = "string indices must be integers"  # iterating the dict: its keys, indexed by a column
_AS_DICT = "list indices must be integers or slices, not str"  # the list indexed by a key


def _trl_layout(run: list[Frame], caller: Frame | None, tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI009: a GRPO trainer's ``compute_loss`` override (the project's) that transformers'
    ``training_step`` called, failing on the layout of ``inputs``: written for TRL 0.14 (a list of
    rows) and run on 0.15 or later (a dict), or the other way round."""
    msg = tb.message
    if caller is None or caller.package != "transformers" or caller.function != "training_step":
        return None
    entered = run[0]
    if entered.function != "compute_loss" or not (msg.startswith(_AS_ROWS) or msg.startswith(_AS_DICT)):
        return None
    trl = log.versions.get("trl")
    grpo = "grpo" in entered.path.lower() or trl is not None
    if not grpo:
        return None  # not known to extend TRL's GRPOTrainer
    as_rows = msg.startswith(_AS_ROWS)
    shown = f"; the log shows TRL {trl.version}" if trl is not None and trl.exact else ""
    where = _frame_text(run[-1])
    if as_rows:
        what = (
            f"your trainer's compute_loss ({where}: {run[-1].code.strip()[:100]}) reads inputs as the list "
            "of the dataset's rows that TRL 0.14's GRPOTrainer passed; from TRL 0.15 compute_loss receives "
            "the dict _prepare_inputs builds (prompt_ids, completion_ids, advantages, …), whose keys are "
            "strings: the override was written for TRL 0.14" + shown
        )
        fix = (
            "install the TRL release the project was written for (pip install 'trl==0.14.0', the only "
            "release with that layout; the project's requirements pin it), or port the override to the "
            "installed TRL's GRPOTrainer (generation and rewards moved to _prepare_inputs / "
            "_generate_and_score_completions)"
        )
    else:
        what = (
            f"your trainer's compute_loss ({where}: {run[-1].code.strip()[:100]}) reads inputs as the dict "
            "that TRL 0.15 and later build in _prepare_inputs (prompt_ids, completion_ids, advantages, …), "
            "but got the list of the dataset's rows that TRL 0.14's GRPOTrainer passed (or a trainer "
            "whose _prepare_inputs does not build it)" + shown
        )
        fix = (
            "install a TRL release of the layout the override reads (pip install 'trl>=0.15.0', the "
            "release the project pins), and keep TRL's _prepare_inputs (an override of it must return "
            "that dict)"
        )
    d = finding("TRI009", [m], log, what, fix, caller=None, callee="trl", exception=tb.name)
    f = d.finding
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d
