"""Any project's own check refusing the run, read from the message's grammar (TRI012, TRI018,
TRI019, TRI022).

``refusal.py`` reads a guard of the GRPO stack (TRL, vLLM, Unsloth, …). The RL stacks users run
(verl and its forks, NeMo-RL, Megatron-Bridge, APEX, ms-swift, LLaMA-Factory, Ray) have guards of
their own whose package envdoctor may not know, and pasted logs often show no frame. What makes
such a message a refusal is its grammar, not its package:

1. **An option that needs what is missing** (TRI012): "X was called with ``opt`` set to True but
   the extension … is not found. To use ``opt`` you must install …": the option, its value and
   what it needs; the fix is the other value, or the install the message names.
2. **A split that does not divide** (TRI012): "only support equal chunk. Got size of DataProto 2
   and chunk 4", "must be divisible by", an ``assert a % b == 0``: two numbers whose quotient is
   not whole; the fix is a multiple.
3. **A divisor the configuration made zero** (TRI012): ``ZeroDivisionError`` on a check's line
   (``assert cfg.mini % cfg.micro == 0``): the option on the right of ``%`` or ``/`` is 0 there,
   set so or derived by an integer division (per-GPU sizes: the configured size // the GPUs); a
   count the framework derives from the data (``refusal.DERIVED``: steps per epoch = the dataset's
   size // the batch), where the log sets no such option and shows it derived, is the data's.
4. **A check of any package naming an option and its demanded value** (TRI012): a raise or assert
   in a frame of any package (not only the stack's), or a message whose words name a snake_case
   option with a demanded value or relation ("``x`` must be ≥ 1, got 0", "``x`` should be …").
5. **The host out of memory** (TRI018): Ray's memory monitor ("Task was killed due to the node
   running low on memory", with its top memory users); a library's allocation of any memory
   (``library_alloc``, by ``oomforms``: the GPU's is TRI001, the host's RAM or pinned memory TRI018).
6. **A version requirement refused** (TRI019): ``require_version``'s "X>=a,<=b is required for a
   normal functioning of this module, but found X==c" (transformers, LLaMA-Factory, …).
7. **A name nothing registered** (TRI022): "No tool registered with name 'x'": a name in the
   config or the data that no code registered.

Each is an error: the log's failure is the symptom, and none hinges on the releases.
"""

from __future__ import annotations

import math
import re

from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

_REFUSAL_TYPES = ("ValueError", "AssertionError", "NotImplementedError", "RuntimeError", "Exception")


#: a line of a run's progress or metrics after the message: not its continuation
_PROGRESS = re.compile(r"\s\|\s|^(?:step|epoch|iter)\b|^\{'|it/s\]", re.IGNORECASE)


def _text(tb: Traceback, m: Match, log: Log) -> str:
    """The exception's message with the lines that continue it (``refusal._more``, up to a line of
    the run's progress or metrics), squeezed."""
    from envdoctor.triage.refusal import _more
    from envdoctor.triage.scanner import squeeze

    more: list[str] = []
    for line in _more(log, tb.line_no or m.line_no):
        if _PROGRESS.search(line.strip()):
            break
        more.append(line)
    return squeeze(" ".join([tb.message.strip(), *(x.strip() for x in more)]))[:3000]


def _where(tb: Traceback) -> tuple[str, str]:
    """The package (or project folder) whose frame raised, and ' in file:line in f', or ('', '')."""
    if not tb.frames:
        return "", ""
    last = tb.frames[-1]
    who = last.package or ""
    func = f" in {last.function}" if last.function else ""
    return who, f" in {last.module_path or last.path}:{last.line}{func}"


# -- 1. an option that needs what is missing ------------------------------------------------------

_OPTION_NEEDS = re.compile(
    r"(?:called |run |used )?with `?(?P<opt>[A-Za-z_]\w{2,80})`? (?:set to|=|is) "
    r"`?(?P<val>True|False|\w{1,40})`?,? "
    r"but (?P<missing>[^.]{3,300}?) (?:is|are|was|were) (?:not (?:found|installed|available)|missing)"
)
_TO_USE = re.compile(
    r"(?i)\bto use (?P<opt>[A-Za-z_]\w{2,80}),? you (?:must|need to|should) (?P<req>[^.]{3,200})"
)
_OPPOSITE = {"True": "False", "true": "false", "1": "0", "False": "True", "false": "true", "0": "1"}


def option_needs(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """An option whose value needs a component the environment lacks (module docstring, 1)."""
    if tb.name not in _REFUSAL_TYPES or not tb.message:
        return None
    text = _text(tb, m, log)
    found = _OPTION_NEEDS.search(text)
    if found is None:
        return None
    opt, val = found.group("opt"), found.group("val")
    other = _OPPOSITE.get(val)
    need = _TO_USE.search(text)
    req = need.group("req").strip() if need and need.group("opt") == opt else ""
    who, where = _where(tb)
    subject = re.sub(r"\s+(?:was|is|were)$", "", found.string[: found.start()].strip()) or "a check"
    what = (
        f"{subject}{' (' + who + where + ')' if who else ''} runs with {opt}={val}, which needs "
        f"{found.group('missing').strip()}, and the environment does not have it: the option's value "
        f"refuses this environment whatever the releases: “{text[:500]}”"
    )
    fix = f"set {opt}: {other} in the run's config (or on its command line)" if other else f"change {opt}"
    if req:
        fix += f", or, to keep {opt}={val}, {req}"
    d = finding("TRI012", [m], log, what, fix, options=[f"{opt}={val}"], package=who or None)
    return at_severity(d, Severity.ERROR)


# -- 2. a split that does not divide --------------------------------------------------------------

_SPLIT_WORDS = re.compile(
    r"(?i)\bequal(?:ly)? (?:chunks?|split|parts?)|\bevenly\b|\bdivisible\b|\bmultiple of\b"
)
#: "size of DataProto 2 and chunk 4", "size 6 … into 4 chunks", "(6) … divisible by … (4)"
_TWO_NUMBERS = re.compile(
    r"(?i)size (?:of (?P<what>[A-Za-z_]\w{0,60}) )?(?:is )?\(?(?P<n>\d{1,9})\)? and "
    r"(?:chunks?|parts?|splits?|"
    r"world[ _]size|dp[ _]size) (?:of )?\(?(?P<k>\d{1,9})\)?"
)
_DIVISIBLE = re.compile(
    r"(?P<a>(?:[A-Za-z_][\w.]{0,40} ){0,5}[A-Za-z_][\w.]{0,80})`? ?(?:\((?P<n>\d{1,9})\)|=\s?(?P<n2>\d{1,9}))"
    r"[^.\n]{0,60}?(?:must be |should be |is not |isn't |not )?(?:evenly )?divisible by (?:the )?"
    r"(?P<b>(?:[A-Za-z_][\w.]{0,40} ){0,5}[A-Za-z_][\w.]{0,80})?`? ?"
    r"(?:\((?P<k>\d{1,9})\)|=\s?(?P<k2>\d{1,9}))"
)


def uneven_split(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A size that a check demands split equally, shown with a count it does not divide (module
    docstring, 2)."""
    if tb.name not in ("AssertionError", "ValueError", "RuntimeError") or not tb.message:
        return None
    text = _text(tb, m, log)
    if not _SPLIT_WORDS.search(text):
        return None
    a = b = ""
    found = _TWO_NUMBERS.search(text)
    if found is not None:
        n, k = int(found.group("n")), int(found.group("k"))
        a = f"the {found.group('what')} batch" if found.group("what") else "the batch"
        b = "chunks (one per worker: the data-parallel ranks, GPUs × nodes)"
    else:
        div = _DIVISIBLE.search(text)
        if div is None:
            return None
        n, k = int(div.group("n") or div.group("n2")), int(div.group("k") or div.group("k2"))
        a = re.sub(r"^(?:the |a |an )", "", div.group("a").strip(), flags=re.IGNORECASE)
        b = (div.group("b") or "the divisor").strip()
    if k <= 0 or n % k == 0:
        return None  # a split that divides: not what failed
    who, where = _where(tb)
    setting = ""  # the option the divisor's words name, where the raise-site index knows its value's name
    if not tb.frames and found is None:
        who, where, setting = _placed(tb, log, b)
        if setting:
            b = f"{setting} ({b})"
    said = _SAID.get(who, who)
    up = math.ceil(n / k) * k
    divisors = [d for d in range(2, min(n, 4096)) if n % d == 0][:6]
    if found is not None:
        what = (
            f"a check{' of ' + said if said else ''}{where} demands an equal split, and {a} of {n} does not "
            f"split into {k} {b}: {n} is not a multiple of {k}: “{text[:400]}”"
        )
        fix = f"make {a} a multiple of {k} (e.g. {up})"
        if divisors:
            fix += f", or split it {' or '.join(map(str, divisors))} ways (fewer or more GPUs or ranks)"
    else:
        what = (
            f"a check{' of ' + said if said else ''}{where} demands that {b} ({k}) divide {a} ({n}), and {n} "
            f"is not a multiple of {k}: “{text[:400]}”"
        )
        fix = f"set {b} to a divisor of {n}" + (f" ({', '.join(map(str, divisors))})" if divisors else "")
        fix += f", or {a} to a multiple of {k} (e.g. {up}) where it is an option"
    if setting and who == "vllm":  # an engine argument: where the run sets it
        from envdoctor.triage.refusal import _setters

        fix += "; set by " + "; ".join(_setters(setting, log, m.context))
    if who == "verl" or "DataProto" in text or any("verl" in line for line in m.context[-12:]):
        fix += (
            "; in verl (and its forks) the batch handed to the workers is data.train_batch_size × "
            "rollout n (and the mini/micro batch sizes), split over trainer.n_gpus_per_node × trainer.nnodes"
        )
    d = finding("TRI012", [m], log, what, fix, size=n, parts=k, package=who or None)
    return at_severity(d, Severity.ERROR)


#: how a message names a package placed by the raise-site index
_SAID = {"vllm": "vLLM"}


def _placed(tb: Traceback, log: Log, words: str) -> tuple[str, str, str]:
    """For a message the log shows without a frame: the package whose raise prints it (the
    raise-site index, ``raisesites.locate_tb``), where, and the name of the value its ``words``
    stand for ("tensor parallel size" -> ``tensor_parallel_size``, the f-string's variable); empty
    strings where no single package raises it."""
    from envdoctor.triage.raisesites import locate_tb

    loc = locate_tb(tb, log)
    if loc is None:
        return "", "", ""
    setting = next((x for site in loc.sites if (x := site.named_at(words))), "")
    if not re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", setting):
        setting = ""  # a local name, not a setting's
    where = f" in {loc.places()} ({loc.package} {loc.span()}; placed by its message)"
    return loc.package, where, setting


# -- 3. a divisor the configuration made zero -----------------------------------------------------

_DIVISOR = re.compile(r"(?:%|//|/)\s*\(?\s*(?P<div>[A-Za-z_][\w.]{0,120}(?:\[['\"]\w{1,80}['\"]\])?)")
_NUMERATOR = re.compile(r"(?P<num>[A-Za-z_][\w.]{0,120})\s*(?:%|//|/)")


def zero_divisor(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """``ZeroDivisionError`` on a line that divides by an option (module docstring, 3)."""
    if tb.name != "ZeroDivisionError" or not tb.frames:
        return None
    code = tb.frames[-1].code
    div = _DIVISOR.search(code)
    if div is None:
        return None
    expr = div.group("div")
    opt = re.sub(r"\[['\"](\w+)['\"]\]", r".\1", expr).rsplit(".", 1)[-1]
    if not re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", opt):
        return None  # not a configuration's name (a loop variable, a local count)
    num = _NUMERATOR.search(code)
    numerator = num.group("num").rsplit(".", 1)[-1] if num else ""
    who, where = _where(tb)
    check = "a check" if code.lstrip().startswith("assert") else "a line"
    from envdoctor.triage.refusal import derived

    drv = derived(opt, 0, log, tb.line_no or m.line_no)
    if drv is not None:  # a count the code derived from the run's inputs, not an option it set
        source, said, fix, not_set = drv
        what = (
            f"{check} of {who or 'the run'}{where} divides by {opt}, which is 0 there: {opt}=0 {not_set}: "
            f"the code derived it from {source}"
            + (f"; the log shows it: “{said}”" if said else "")
            + f": `{code.strip()[:200]}`"
        )
        d = finding("TRI012", [m], log, what, fix, options=[opt], package=who or None, derived=True)
        return at_severity(d, Severity.ERROR)
    what = (
        f"{check} of {who or 'the run'}{where} divides by {opt}, which is 0 there: the configuration "
        f"set it to 0, or the code derived it by an integer division that rounds down to 0 (a per-GPU "
        f"size is the configured size // the number of GPUs or ranks sharing it): `{code.strip()[:200]}`"
    )
    fix = (
        f"set {opt} so that it stays ≥ 1 where it is used: at least the number of GPUs (ranks) it is "
        "divided over" + (f", and a divisor of {numerator}" if numerator and numerator != opt else "")
    )
    d = finding("TRI012", [m], log, what, fix, options=[opt], package=who or None)
    return at_severity(d, Severity.ERROR)


# -- 4. any package's check naming an option and the value it demands -----------------------------

#: "x must be …", "x should be …", "x (4) must be greater than y (8)", "expected x … got y"
_DEMANDS = re.compile(
    r"(?<![\w.])`?(?P<opt>[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+)`?(?: \(\S{1,40}\)| = ?\S{1,40})? "
    r"(?:must|should|has to|needs to) (?:be|equal|match|not exceed|not be|divide)\b[^.\n]{1,200}"
    r"|\bexpected `?(?P<opt2>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`? (?:to be )?[^.\n]{1,100}?,? "
    r"(?:but )?got\b[^.\n]{0,100}"
    r"|(?<![\w.])`?(?P<opt3>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?(?:=\S{1,40})? is not supported\b[^.\n]{0,200}"
    r"|\bonly (?:support|supports|supported)\b[^.\n]{0,60}?"
    r"`?(?P<opt4>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?[^.\n]{0,100}"
    r"|(?<![\w.])`?(?P<opt5>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`? \(\S{1,40}\) "
    r"(?:is not equal to|does not equal|does not match) [^.\n]{1,200}"
)
#: an assert whose condition compares (``assert a % b == 0``, ``assert x in (…)``), not a call's result
_COMPARISON = re.compile(r"^assert [^,]{0,300}?(?:==|!=|<=|>=|<|>| in | not in | is )")
_SNAKE_IN = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
_ASSERT_ATTRS = re.compile(r"\.(?P<opt>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")


def any_check(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A check of any package or project naming an option and the value or relation it demands
    (module docstring, 4); after ``refusal.package_refusal``, which knows the stack's guards."""
    from envdoctor.triage.refusal import _NOT_CONFIG, _REFUSING, _contradicts_itself, _own_fix

    if tb.name not in _REFUSAL_TYPES or not tb.message.strip():
        return None
    text = _text(tb, m, log)
    if _NOT_CONFIG.search(text) or _contradicts_itself(text):
        return None
    last = tb.frames[-1] if tb.frames else None
    guard = last is not None and last.code.startswith(("raise", "assert"))
    found = _DEMANDS.search(text)
    opts: list[str] = []
    if found is not None:
        opts = [next(g for g in found.group("opt", "opt2", "opt3", "opt4", "opt5") if g)]
        opts += [o for o in _SNAKE_IN.findall(found.group(0)) if o not in opts]
    compares = last is not None and _COMPARISON.match(last.code) is not None
    if guard and compares and last is not None and tb.name == "AssertionError":
        opts += [o for o in _ASSERT_ATTRS.findall(last.code.split(",")[0]) if o not in opts]
    if found is None and not _REFUSING.search(text):
        return None  # an assert's own words that refuse nothing ("… is not correctly loaded")
    if not opts or (found is None and not guard):
        return None
    if tb.frames and not guard:
        return None  # raised below the shown frame: not the check itself
    who, where = _where(tb)
    from envdoctor.triage.refusal import derived, refused_value

    value = refused_value(text)
    drv = derived(value[0], value[1], log, tb.line_no or m.line_no) if value else None
    if drv is not None and value is not None:  # a value the code derived from the run's inputs
        source, seen, how, not_set = drv
        what = (
            f"{'a check of ' + who if who else 'a check'}{where} refused a value it was handed: "
            f"“{text[:400]}” — {value[0]}={value[1]} {not_set}: the code derived it from {source}"
            + (f"; the log shows it: “{seen}”" if seen else "")
        )
        d = finding("TRI012", [m], log, what, how, options=[value[0]], package=who or None, derived=True)
        return at_severity(d, Severity.ERROR)
    said = _own_fix(text)
    shown = found.group(0).strip() if found is not None else last.code.strip() if last else ""
    what = (
        f"{'a check of ' + who if who else 'a check'}{where} refused the run's configuration: "
        f"{', '.join(opts[:3])} — the check: “{shown[:300]}”" + (f": “{text[:500]}”" if text != shown else "")
    )
    fix = (
        f"the message's own fix: {said} (or set {', '.join(opts[:3])} to what the check demands)"
        if said
        else f"set {', '.join(opts[:3])} to what the check demands ({shown[:200]}), in the run's config "
        "or on its command line"
    )
    unequal = re.match(r"(?P<a>.+?) (?:is not equal to|does not equal|does not match) (?P<b>.+)", shown)
    if found is not None and found.group("opt5") and unequal is not None and not said:
        fix = (
            f"make {unequal.group('a')} equal to {unequal.group('b').rstrip('.*` ')} (the values the check "
            "compares), in the run's config or on its command line"
        )
    d = finding("TRI012", [m], log, what, fix, options=opts[:4], package=who or None)
    return at_severity(d, Severity.ERROR)


# -- 5. the host out of memory --------------------------------------------------------------------

_RAY_USAGE = re.compile(
    r"was (?P<used>[\d.]{1,12})GB / (?P<total>[\d.]{1,12})GB \((?P<frac>[\d.]{1,12})\), which exceeds the "
    r"memory usage threshold of (?P<thr>[\d.]{1,12})"
)
_TOP_USER = re.compile(r"^\s*(?P<pid>\d{1,9})\s+(?P<gb>[\d.]{1,12})\s+(?P<cmd>\S.{0,200})$")


def _top_users(log: Log, line_no: int) -> list[tuple[str, int, float]]:
    """Ray's "Top 10 memory users" after the message: (command, processes, GB in all), largest first."""
    if not log.head:
        return []
    lines = log.head[: 1 << 20].decode("utf-8", "replace").split("\n")[line_no : line_no + 40]
    got: dict[str, list[float]] = {}
    for raw in lines:
        from envdoctor.triage.scanner import split_prefix

        row = _TOP_USER.match(split_prefix(raw)[0])
        if row is not None:
            got.setdefault(row.group("cmd").strip(), []).append(float(row.group("gb")))
    return sorted(((c, len(v), sum(v)) for c, v in got.items()), key=lambda x: -x[2])


def host_memory(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """Ray's memory monitor killed a task or actor: the node's RAM, not a GPU's (module docstring, 5)."""
    from envdoctor.triage.oom import levers
    from envdoctor.triage.oomforms import by_id

    if not tb.name.endswith("OutOfMemoryError") or not by_id("ray-memory-monitor").pattern.search(tb.message):
        return None
    text = _text(tb, m, log)
    usage = _RAY_USAGE.search(text)
    what = "the node ran out of host memory (RAM, not GPU memory): Ray's memory monitor killed a task"
    if usage is not None:
        what += (
            f" when the node used {usage.group('used')} GB of {usage.group('total')} GB "
            f"({float(usage.group('frac')):.0%}, above Ray's threshold {usage.group('thr').rstrip('.')})"
        )
    top = _top_users(log, tb.line_no or m.line_no)
    if top:
        cmd, n, gb = top[0]
        what += f"; the largest holder: {cmd} ({n} process{'es' * (n > 1)}, {gb:.1f} GB)"
    fix = (
        levers(by_id("ray-memory-monitor"))
        + "; RAY_memory_usage_threshold (default 0.95) only moves the limit"
    )
    d = finding("TRI018", [m], log, what, fix, host_oom="ray-memory-monitor", oom_form="ray-memory-monitor")
    return at_severity(d, Severity.ERROR)


# -- 6. a version requirement refused --------------------------------------------------------------

#: require_version's requirement: a name and up to five comparisons (``vllm>=0.4.3,<=0.7.3``)
_REQ = (
    r"(?P<req>(?P<pkg>[A-Za-z][\w.\-]{0,80})\s?(?:[<>=!~]=?|===)\s?[\w.*+\-]{1,40}"
    r"(?:\s?,\s?(?:[<>=!~]=?)\s?[\w.*+\-]{1,40}){0,4})"
)
_REQUIRED = re.compile(
    _REQ + r" is required for a normal functioning of this "
    r"module, but found (?P<found>[A-Za-z][\w.\-]{0,80})==(?P<ver>[\w.+\-]{1,40})"
)
_TO_FIX = re.compile(r"(?i)to fix:?\s*(?P<fix>.{5,300})")
#: the same message cut after "is required" (a one-line paste, an issue's title): the range is there,
#: the release found is not
_REQUIRED_CUT = re.compile(_REQ + r" is required(?: for a normal functioning of this module)?[.,]?")


def version_requirement(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """``require_version`` refused the installed release (module docstring, 6)."""
    if tb.name not in ("ImportError", "ValueError", "RuntimeError", "Exception", "ImportWarning"):
        return None
    text = _text(tb, m, log)
    found = _REQUIRED.search(text)
    if found is None:
        return _cut_requirement(tb, m, log)
    req, pkg, ver = found.group("req"), found.group("found"), found.group("ver").rstrip(".")
    who, where = _where(tb)
    what = (
        f"{'the check of ' + who if who else 'a version check'}{where} requires {req}, and the environment "
        f"has {pkg} {ver}, outside that range: the project refuses to import with it"
    )
    said = _TO_FIX.search(text)
    fix = (
        f"pip install '{req.replace(' ', '')}' in the environment that runs it, or upgrade the project to a "
        f"release whose range admits {pkg} {ver}"
    )
    if said:
        fix += f" (the message's own fix: {said.group('fix').strip()})"
    d = finding("TRI019", [m], log, what, fix, requirement=req, found=f"{pkg}=={ver}")
    return at_severity(d, Severity.ERROR)


def _cut_requirement(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """require_version's ImportError cut after "is required" (the whole message is the range): the
    check refused the release installed (or found none); which one, the line does not show."""
    cut = _REQUIRED_CUT.fullmatch(tb.message.strip()) if tb.name == "ImportError" else None
    if cut is None:
        return None
    req, pkg = cut.group("req"), cut.group("pkg")
    who, where = _where(tb)
    what = (
        f"{'the check of ' + who if who else 'a version check'}{where} requires {req}, and the environment's "
        f"{pkg} is outside that range or missing (the line stops before the release it found): the project "
        "refuses to import"
    )
    fix = (
        f"pip install '{req.replace(' ', '')}' in the environment that runs it "
        f"(`pip show {pkg}` shows the release it has)"
    )
    d = finding("TRI019", [m], log, what, fix, requirement=req)
    return at_severity(d, Severity.ERROR)


# -- 7. a name nothing registered ------------------------------------------------------------------

_UNREGISTERED = re.compile(
    r"(?i)\bno (?P<kind>[\w ]{1,40}?) (?:is )?registered (?:with|under|for|as) (?:the )?(?:name|key|id|type) "
    r"[`'\"](?P<name>[^`'\"]{1,120})[`'\"]"
    r"|[`'\"](?P<name2>[^`'\"]{1,120})[`'\"] is not (?:a )?registered(?: (?P<kind2>[\w ]{1,40}?))?\b"
)


def unregistered(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A lookup of a name that no code registered (module docstring, 7)."""
    if tb.name not in ("ValueError", "KeyError", "RuntimeError", "AssertionError", "LookupError"):
        return None
    found = _UNREGISTERED.search(tb.message)
    if found is None:
        return None
    name = found.group("name") or found.group("name2")
    kind = (found.group("kind") or found.group("kind2") or "entry").strip()
    who, where = _where(tb)
    what = (
        f"the run asked {who or 'its code'}{where} for the {kind} '{name}', and no {kind} of that name is "
        f"registered: the name comes from the run's config or its data (a sample's field), and it is "
        "misspelt, renamed in this release of the code, or its module (the plugin that registers it) was "
        "not imported"
    )
    fix = (
        f"change '{name}' in the config or the data to a {kind} name the code registers (its registry lists "
        f"them), or import the module that registers '{name}' before the run"
    )
    d = finding("TRI022", [m], log, what, fix, name=name, kind=kind)
    return at_severity(d, Severity.ERROR)


def library_alloc(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A library's allocation failed (``oomforms``: cuBLAS, cuDNN, NCCL's buffers, HIP, the CUDA driver,
    pinned host memory, PyTorch's CPU allocator): the GPU's memory used up is TRI001, the host's RAM
    or its pinned memory TRI018; the fix acts on the memory that ran out."""
    from envdoctor.triage.oom import levers
    from envdoctor.triage.oomforms import find, what_ran_out
    from envdoctor.triage.runkind import run_kind

    if not tb.name.endswith("Error"):
        return None
    text = _text(tb, m, log)
    form = find(text, [*(f"{f.path}, in {f.function}" for f in tb.frames[-3:]), *m.context])
    if form is None or form.id == "torch-caching-allocator":
        return None  # PyTorch's own message is the cuda-oom signature's (oom.py), with its numbers
    vllm = True if any(f.package == "vllm" for f in tb.frames[-3:]) else None
    if vllm is None and b"vllm" not in (log.head or b"")[: 1 << 20].lower():
        vllm = False  # the log never names vLLM: the training step's memory
    fix = levers(form, log.ctx, vllm, run_kind(log))
    if form.memory == "gpu":
        short, _, said = form.allocator.partition(" (")
        what = (
            f"{what_ran_out(form)} ran out where {short} allocated memory of its own"
            + (f" ({said}" if said else "")
            + ": the model, "
            "optimizer state, activations, vLLM's share or another process had taken the GPU's memory (the "
            "message gives no numbers; a library's first allocation, such as cuBLAS's handle or NCCL's "
            "buffers, fails when the GPU is already full)"
        )
        return at_severity(
            finding("TRI001", [m], log, what, fix, allocator=form.id, oom_form=form.id), Severity.ERROR
        )
    what = (
        f"{form.allocator} could not get {what_ran_out(form)}: the process, or the node's other processes, "
        "used it up (a model loaded on the CPU first, CPU offload, pinned buffers, data loader workers)"
    )
    d = finding("TRI018", [m], log, what, fix, host_oom=form.id, oom_form=form.id)
    return at_severity(d, Severity.ERROR)


def keyword_no_release_takes(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A call into a stack package with a keyword that no release of its symbol history takes, where
    the traceback shows only that package's frames (the caller cut off, or a Ray actor's task that
    starts inside it): the calling code was written for a release older than the history, or for a
    patched copy (an RL stack's vendored engine), or the keyword is the run's own: a warning (TRI009)."""
    from envdoctor.knowledge.symbol_history import history
    from envdoctor.triage.boundary import _CALL, _object_package

    if tb.name != "TypeError" or not tb.frames:
        return None
    call = _CALL.search(tb.message)
    if call is None or not call.group("kwarg") or f"'{call.group('kwarg')}'" not in tb.message:
        return None
    pkg = tb.frames[-1].package
    if pkg is None or any(f.package != pkg for f in tb.frames):
        return None  # a caller is shown: the boundary's own answer
    func, kwarg = call.group("func"), call.group("kwarg")
    cls, _, name = func.rpartition(".")
    cls = cls.rsplit(".", 1)[-1] or None
    if _object_package(cls or name) not in (None, pkg):
        return None
    h = history(pkg)
    if h is None or not h.releases:
        return None
    scope, got = h.params(cls, name, kwarg)
    if not scope or got or h.params(cls, name, kwarg, var=True)[1]:
        return None  # a function the history lacks, or releases that take it: the history's drift
    first, last = h.releases[0], h.releases[-1]
    entry = tb.frames[0]
    short = func.removesuffix(".__init__")
    what = (
        f"the code that called {pkg} (not shown: the traceback starts in {pkg}'s {entry.module_path}:"
        f"{entry.line}{' in ' + entry.function if entry.function else ''}) passes '{kwarg}' to "
        f"{short}(), which no {pkg} release from {first} to {last} takes (envdoctor's symbol history): that "
        f"code was written for a {pkg} older than {first} or a patched copy of it (an RL stack's vendored "
        f"engine), or the keyword is the run's own"
    )
    fix = (
        f"install the {pkg} release the calling code pins (its requirements: an RL stack's copy written "
        f"for an older {pkg}), or update that code to {short}() of the installed {pkg}; drop '{kwarg}' "
        "where your config sets it"
    )
    d = finding("TRI009", [m], log, what, fix, callee=pkg, keyword=kwarg)
    return at_severity(d, Severity.WARNING)


def from_traceback(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """The first of this module's answers for the exception ``tb``."""
    return (
        host_memory(tb, m, log)
        or library_alloc(tb, m, log)
        or version_requirement(tb, m, log)
        or option_needs(tb, m, log)
        or uneven_split(tb, m, log)
        or zero_divisor(tb, m, log)
        or unregistered(tb, m, log)
        or keyword_no_release_takes(tb, m, log)
    )
