"""Who raised a message the log shows without its frame, from the raise-site index (rules/knowledge/
raises/, scripts/derive_raise_sites.py): the package, file and function whose ``raise`` / ``assert``
prints it and the releases whose code has that raise (the run's release is one of them: it raised).

Three uses, each on the log's failing exception when its frames do not show another place:

1. **lifted in a later release** (TRI014, the fix history's idea): the raise is in no release after
   B although its function stays; release B+1 lifted (or reworded) what it refused. An error with
   the upgrade as the fix when the commit that removed it says it fixes, supports or removes the
   restriction; a warning naming the release otherwise;
2. **new in release A** (TRI034, a warning): the raise first appears in A (not in the oldest
   release indexed): a check or a regression that came with A;
3. **the place** for the answers that need one: TRI012's refusal with no frame names the package
   and function, TRI003's first exception says where it was raised.

A message many packages raise alike (out of memory, a CUDA error) or fitting raises of two packages
is pinned on none; a log whose version of the package is outside the raise's releases contradicts
it (another package printed the message).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge.frame_index import named
from envdoctor.knowledge.raise_sites import Hit, Lift, Site, locate
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

LIFTED = "TRI014"
NEW = "TRI034"
MAX_PLACES = 3  # functions named in a finding
#: how the package is installed (pip's name) where it differs from the index's name
_PIP = {"unsloth-zoo": "unsloth_zoo"}


@dataclass(frozen=True)
class Location:
    """The raise sites of one package that print a message."""

    package: str
    sites: tuple[Site, ...]
    releases: tuple[str, ...]  # the union of the sites' releases, oldest first
    lift: Lift | None  # every site is gone from this release on
    new_in: str  # the release whose code first has the raise, in a function it kept ("" else)
    complete: bool  # the message shows the whole template
    framed: bool  # the traceback shows a frame of the package
    shown: str  # the package's version the log shows ("" for none)

    def span(self) -> str:
        lo, hi = self.releases[0], self.releases[-1]
        return lo if lo == hi else f"{lo}–{hi}"

    def places(self) -> str:
        seen = list(dict.fromkeys(s.where() for s in self.sites))
        more = f" (and {len(seen) - MAX_PLACES} more)" if len(seen) > MAX_PLACES else ""
        return "; ".join(seen[:MAX_PLACES]) + more


def _order(index_releases: list[str], releases: set[str]) -> tuple[str, ...]:
    return tuple(r for r in index_releases if r in releases)


def _shown(log: Log, package: str) -> str:
    v = log.versions.get(package)
    return v.version if v is not None and v.exact and not v.inferred else ""


#: Unsloth's generated copy of a TRL trainer (``unsloth_compiled_cache/UnslothSFTTrainer.py``, or
#: the file's name alone as a paste shows it): TRL's code, its raises TRL's (``fixhist._COMPILED``)
_COPIED = re.compile(r"(?:^|/)(?:unsloth_compiled_cache/)?Unsloth(?P<trainer>[A-Za-z]{1,40})Trainer\.py$")


def _frame_fits(tb: Traceback, hits: list[Hit]) -> bool:
    """The traceback's innermost frame, if it shows where the exception was raised (a ``raise`` or
    ``assert`` line, or a frame of the package located), is one of the sites' functions."""
    if not tb.frames:
        return True
    last = tb.frames[-1]
    package = hits[0].site.package
    raising = last.code.startswith(("raise", "assert"))
    copied = _COPIED.search(last.path.replace("\\", "/")) if last.package is None else None
    if copied is not None and package == "trl":  # Unsloth's copy of TRL's trainer: TRL's raise
        want = [f"{copied.group('trainer')}Trainer", *(last.function.split(".") if last.function else [])]
        return any(named(h.site.function, want[1:] or want) for h in hits if h.site.function)
    if last.package not in (package, package.replace("-", "_")) and not (
        last.package is None and f"/{package.replace('-', '_')}/" in last.path.replace("\\", "/")
    ):
        return not raising and last.package is None  # the user's code calling in, the rest cut
    want = last.function.split(".") if last.function else []
    return not want or any(named(h.site.function, want) for h in hits if h.site.function)


#: a log's line that starts another record, not a message's next line: a frame, a chained
#: exception's header, a logger's level or timestamp, glog's ``I0101``, another exception's line
_NOT_CONTINUED = re.compile(
    r"^(?:File \"|Traceback|During handling|The above exception|\^|~|"
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|\[?\d{4}-\d\d-\d\d|[IWEF]\d{4} |"
    r"[\w.]{1,100}(?:Error|Exception|Warning|Interrupt|Exit)(?::|$))"
)
MAX_CONTINUED = 8  # lines after the exception's line read as the rest of its message


def continuation(log: Log, line_no: int, limit: int = MAX_CONTINUED) -> list[str]:
    """The lines after line ``line_no`` of the log's head that continue its message (a message
    that goes on over several lines: TRL's padding-free refusal, pydantic's details): at most
    ``limit``, up to a blank line, a frame, another exception, a logger's line, or a line whose
    launcher prefix (``[rank1]:``, ``(pid=…)``) is not the exception line's."""
    from envdoctor.triage.scanner import clean, split_prefix

    head = log.head
    if not head or line_no <= 0:
        return []
    start = 0
    for _ in range(line_no - 1):  # the offset of line ``line_no``
        nxt = head.find(b"\n", start)
        if nxt < 0:
            return []
        start = nxt + 1
    rows = head[start : start + 16384].split(b"\n")[: limit + 1]
    if len(rows) < 2:
        return []
    first = clean(rows[0][:4096])
    prefix = first[: len(first) - len(split_prefix(first)[0])].strip()
    out: list[str] = []
    for raw in rows[1:]:
        line = clean(raw[:4096])
        body = split_prefix(line)[0]
        text = body.strip()
        if not text or _NOT_CONTINUED.match(text):
            break
        if line[: len(line) - len(body)].strip() != prefix:
            break  # another process's (or rank's) line, or a prefix the message's line has not
        out.append(body.rstrip())
    return out


def message(tb: Traceback, log: Log | None) -> str:
    """``tb``'s message with the lines after its exception's line that continue it: the fewest
    lines with which the raise-site index places the text as one raise's template best (it shows
    more of a template, or a whole one) — not the lines after the template's end (the next
    record: ``wandb:``, ``srun:``, a warning with no prefix); else the message as the line shows
    it. A line may add to the template only with the next one (a line that ends a sentence inside
    it fits no whole template): every count of lines up to ``MAX_CONTINUED`` is asked."""
    if log is None or not tb.line_no or not tb.exc_type or not tb.message.strip():
        return tb.message  # a line quoted without its exception's name is read alone (``quoted_lines``)
    more = continuation(log, tb.line_no)
    if not more:
        return tb.message
    alone = locate(tb.message, tb.name)
    best, out = max((h.matched for h in alone), default=0), tb.message
    joined = tb.message.strip()
    for line in more:
        joined = f"{joined} {line.strip()}"
        got = max((h.matched for h in locate(joined, tb.name)), default=0)
        if got > best:  # a line after the template's end adds nothing: the fewer lines stand
            best, out = got, joined
    return out


def locate_tb(tb: Traceback, log: Log) -> Location | None:
    """The package and raise sites that print ``tb``'s message (module docstring), its lines
    after the exception's line joined where they continue a raise's template (``message``)."""
    if not tb.message.strip():
        return None
    hits = locate(message(tb, log), tb.name)
    if not hits:
        return None
    packages = {h.site.package for h in hits}
    if len(packages) != 1:
        return None  # raised alike by several packages: pinned on none
    package = hits[0].site.package
    if not _frame_fits(tb, hits):
        return None
    from envdoctor.knowledge.raise_sites import raise_index

    index = raise_index(package)
    if index is None:
        return None
    releases = _order(index.releases, {r for h in hits for r in h.site.releases})
    shown = _shown(log, package)
    if shown and shown in index.releases and shown not in releases:
        return None  # the log's release has no such raise: another program printed it
    latest = [h.site for h in hits if h.site.last == releases[-1]]
    lift = latest[0].lifted if all(s.lifted is not None for s in latest) else None
    if (
        lift is not None
        and lift.release in index.releases
        and index.releases.index(lift.release) <= index.releases.index(releases[-1])
    ):
        lift = None  # another site raises it in that release still
    if lift is not None and shown and versions.at_least(shown, lift.release):
        return None  # the log's release is past the lift: another program printed it
    new_in = releases[0] if all(h.site.added and h.site.first == releases[0] for h in hits) else ""
    if new_in and any(index.copies_before(h.site.template, h.site.exc, new_in) for h in hits):
        new_in = ""  # a copy of the check (another class's) is older: it did not come with new_in
    return Location(
        package,
        tuple(h.site for h in hits),
        releases,
        lift,
        new_in,
        all(h.complete for h in hits),
        any(f.package == package for f in tb.frames),
        shown,
    )


def standing(tb: Traceback, log: Log, package: str) -> str:
    """The newest release envdoctor indexes of ``package`` when the raise that prints ``tb``'s
    message, in the very words the log shows, is still in it (nothing lifted or reworded it): a
    later release makes the same check; "" where the message is not placed there, or was lifted."""
    loc = locate_tb(tb, log)
    if loc is None or loc.package != package or loc.lift is not None:
        return ""
    from envdoctor.knowledge.raise_sites import raise_index

    index = raise_index(package)
    newest = index.releases[-1] if index is not None and index.releases else ""
    return newest if newest and loc.releases[-1] == newest else ""


def _pip(package: str) -> str:
    return _PIP.get(package, package)


def _said(loc: Location) -> str:
    """Where and in which releases the message is raised, for a finding's message."""
    how = "placed by its message in envdoctor's raise-site index" + (
        "" if loc.framed else "; the log shows no frame of it"
    )
    return f"{loc.package} {loc.span()} raises this in {loc.places()} ({how})"


def lifted(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """The raise was lifted in a later release (module docstring, 1): TRI014."""
    loc = locate_tb(tb, log)
    if loc is None or loc.lift is None:
        return None
    lift = loc.lift
    by = ""
    if lift.commit:
        by = f" (commit {lift.commit}: {lift.title}" + (f", {lift.url}" if lift.url else "") + ")"
    shown = f"; the log shows {loc.package} {loc.shown}" if loc.shown else ""
    what = f"{_said(loc)}; {loc.package} {lift.release} no longer does{by}{shown}: " + (
        "that release lifted what this raise refused"
        if lift.lifts and lift.commit
        else "the raise is gone from that release on (lifted or reworded: its release notes say which)"
    )
    fix = f"pip install '{_pip(loc.package)}>={lift.release}' (the first release without this raise)"
    d = finding(
        LIFTED,
        [m],
        log,
        what,
        fix,
        package=loc.package,
        raised_in=loc.places(),
        releases=loc.span(),
        lifted_in=lift.release,
        commit=lift.commit or None,
        sources=[lift.url] if lift.url else None,
        located_by="raise-site index",
    )
    severity = Severity.ERROR if lift.lifts and lift.commit else Severity.WARNING
    return at_severity(d, severity)


def new_in_release(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """The raise came with a release (module docstring, 2): TRI034, a warning."""
    loc = locate_tb(tb, log)
    if loc is None or not loc.new_in or loc.lift is not None:
        return None
    shown = f"; the log shows {loc.package} {loc.shown}" if loc.shown else ""
    what = (
        f"{_said(loc)}; releases before {loc.new_in} have no such raise: a check or a regression that "
        f"came with {loc.package} {loc.new_in}{shown}"
    )
    fix = (
        f"if this run worked with an older {loc.package}, the check {loc.new_in} added refuses it: read "
        f"{loc.package} {loc.new_in}'s release notes, and pin '{_pip(loc.package)}<{loc.new_in}' to confirm "
        "(a regression: report it upstream); otherwise follow the message"
    )
    d = finding(
        NEW,
        [m],
        log,
        what,
        fix,
        package=loc.package,
        raised_in=loc.places(),
        releases=loc.span(),
        new_in=loc.new_in,
    )
    return at_severity(d, Severity.WARNING)


def place(tb: Traceback, log: Log) -> str:
    """Where the message is raised, for another rule's finding ("" where the index cannot tell)."""
    loc = locate_tb(tb, log)
    return "" if loc is None else _said(loc)


def _traceback(m: Match) -> Traceback | None:
    from envdoctor.triage.traceback import failure

    return failure(m.context, m.text, m.line_no)


def lifted_for(m: Match, log: Log) -> Draft | None:
    """``lifted`` for a failing line another rule named only as likely (a warning): a lifted raise
    whose removal says it lifts the restriction is the certain answer."""
    tb = _traceback(m)
    d = lifted(tb, m, log) if tb is not None else None
    return d if d is not None and d.finding.severity == Severity.ERROR else None


def placed(f: Finding, m: Match, log: Log) -> Finding:
    """TRI003's first exception with where its message is raised (``place``), when the log shows no
    frame of the package that raised it."""
    tb = _traceback(m)
    where = place(tb, log) if tb is not None else ""
    if not where:
        return f
    return Finding(
        f.rule, f.severity, f"{f.message}; {where}", f.fix, {**f.evidence, "placed_by": "raise-site index"}
    )


MAX_QUOTED_LINES = 40  # a paste this short is read line by line for a message quoted without its type


def quoted_lines(head: bytes) -> Iterator[tuple[Match, Traceback]]:
    """The lines of a short paste (at most ``MAX_QUOTED_LINES``) that may quote a message without
    its exception's name, each as a match of the unrecognised-exception signature and a traceback
    of that message alone."""
    from envdoctor.triage.scanner import clean, split_prefix
    from envdoctor.triage.signatures import signatures

    if not head or head.count(b"\n") > MAX_QUOTED_LINES:
        return
    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if sig is None:
        return
    lines = head.decode("utf-8", errors="replace").split("\n")
    for line_no, raw in enumerate(lines, 1):
        body = split_prefix(clean(raw[:8192].encode()))[0].strip().strip("\"'`“”")
        if len(body) < 24 or body.startswith(("File ", "Traceback")):
            continue
        m = Match(sig, line_no, body[:1000], {}, None, tuple(lines[max(0, line_no - 41) : line_no - 1]))
        yield m, Traceback(message=body, line_no=line_no)


def quoted(head: bytes, log: Log) -> Draft | None:
    """A message a short paste quotes without its exception's name (an issue's words, ``str(e)``
    printed by a wrapper) that a later release's code no longer raises: ``lifted`` on that line, an
    error only (the removal says it lifts the restriction). Read only where no failing line was
    found, in a log of at most ``MAX_QUOTED_LINES`` lines."""
    for m, tb in quoted_lines(head):
        d = lifted(tb, m, log)
        if d is not None and d.finding.severity == Severity.ERROR:
            return d
    return None


# -- a refusal bound to a range of releases (TRI012) ------------------------------------------------

MAX_COPIES = 400  # sites of one package compared with the raising one (its copies in other classes)
MIN_SIMILAR = 0.9  # how close a copy's template is to the raising one (difflib's ratio)
MAX_TEMPLATE = 600  # characters of a template compared


@dataclass(frozen=True)
class Bound:
    """A refusal whose raise is in a range of a package's releases only: the check (named once for
    its copies in several classes), the releases whose code has it, and the releases on either
    side without it."""

    package: str
    check: str  # how the finding names the check
    refusing: str  # "4.45.2–4.57.6" ("… or earlier" where the oldest release indexed has it)
    first_without: str  # the first release after the range without it ("" where the newest has it)
    added_in: str  # the release that added it to a function it kept ("" where not known)
    before: str  # the release before ``added_in``
    #: the check is copied into several classes and the log does not show whose copy raised it:
    #: the releases are those with any copy (the run's class may have left its copy earlier)
    unsure_copy: bool = False
    #: the model type the log shows has no copy of the check in any release indexed: the run's
    #: release is older than the index's first (``first_without``), or another class raised it
    not_indexed: str = ""

    def said(self) -> str:
        """The releases that refuse and those that do not, for a finding's message."""
        if self.not_indexed:
            pkg, first, kind = self.package, self.first_without, self.not_indexed
            return (
                f"no {pkg} release indexed ({self.refusing}) has a copy of this check in the class of "
                f"model_type '{kind}': the run's {pkg} is older than {first} (that class's copy was in an "
                "earlier release), or another model's class raised it (envdoctor's raise-site index)"
            )
        one = "–" not in self.refusing and "earlier" not in self.refusing
        # the check's message is in their code; what its condition (or a support list) accepts may
        # change within the range (Unsloth's fast-inference list of models grows): "has", not "refuses"
        out = f"{self.package} {self.refusing} {'has' if one else 'have'} this check"
        if self.unsure_copy:
            out = (
                f"{self.package} {self.refusing} {'has' if one else 'have'} a copy of this check; whether a "
                f"release before {self.first_without} accepts it depends on the model's own class, which the "
                "log does not show"
            )
        if self.added_in:
            out += f" (the check came with {self.added_in}: {self.before} and earlier do not make it)"
        if self.first_without:
            some = "any copy of " if self.unsure_copy else ""
            out += f"; {self.first_without} is the first release without {some}this check"
        return out + " (envdoctor's raise-site index)"

    def fix(self) -> str:
        """The release that accepts it, as a fix beside changing the setting."""
        pip = _pip(self.package)
        if self.not_indexed:
            first = self.first_without
            return (
                f"install {self.package} {first} or later (pip install '{pip}>={first}'), the oldest release "
                f"envdoctor's index holds: none of its releases has this check in the class of model_type "
                f"'{self.not_indexed}'"
            )
        if self.first_without:
            return (
                f"install {self.package} {self.first_without} or later, the first release without "
                f"{'any copy of ' if self.unsure_copy else ''}this check "
                f"(pip install '{pip}>={self.first_without}'; the check's function is gone from that "
                "release: where its code moved, its release notes say what the new code accepts)"
            )
        return (
            f"pin '{pip}<{self.added_in}' ({self.before}, the last release before the check), where the "
            "code that hands it this value was written for such a release"
        )


def _base(function: str) -> str:
    return function.rsplit(".", 1)[-1]


def _owner(function: str) -> str:
    return function.rsplit(".", 1)[0] if "." in function else ""


MIN_REWORDED = 0.75  # a template this close to the check's in another release: the check reworded or moved
MAX_ROWS = 60000  # rows of one package's index compared for a reworded check


def _reworded(package: str, templates: set[str], release: int) -> bool:
    """Some raise of ``package`` in release ``release`` (an index into its releases) has a template
    this close (``MIN_REWORDED``) to one of ``templates``: the check is there, reworded or moved to
    another function (transformers' DeepSpeed Zero-3 check leaving from_pretrained)."""
    from difflib import SequenceMatcher

    from envdoctor.knowledge.raise_sites import raise_index

    index = raise_index(package)
    if index is None:
        return True  # nothing tells: the check may be there
    mine = [(t[:MAX_TEMPLATE], _names(t)) for t in templates]
    for row in index.rows[:MAX_ROWS]:
        other = str(row[1])[:MAX_TEMPLATE]
        close = [
            (t, names)
            for t, names in mine
            if 2 * min(len(t), len(other)) >= MIN_REWORDED * (len(t) + len(other))
        ]
        if not close:
            continue  # lengths too far apart for the ratio (difflib's real_quick_ratio, first)
        try:
            there = any(int(lo) <= release <= int(hi) for lo, hi in row[4])
        except (TypeError, ValueError):
            continue
        if not there:
            continue
        theirs = _names(other)
        for t, names in close:
            if names and not (theirs and theirs <= names):
                continue  # a look-alike about another setting (`pad_token` for `eos_token`)
            sm = SequenceMatcher(None, t, other, autojunk=False)
            if (
                sm.real_quick_ratio() >= MIN_REWORDED
                and sm.quick_ratio() >= MIN_REWORDED
                and sm.ratio() >= MIN_REWORDED
            ):
                return True
    return False


_NAME = re.compile(r"`([^`\x00]{1,60})`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")


def _names(template: str) -> set[str]:
    """The settings a template names: its quoted words and snake_case names."""
    return {a or b for a, b in _NAME.findall(template)}


def _class_gone(package: str, site: Site, release: str) -> bool:
    """The frame index knows ``site``'s file and has no function of its class (or, at module
    level, no function at all) in ``release``: the class or file went, not the check alone (TRL's
    BestOfNSampler leaving trl.extras in 0.25.0)."""
    from envdoctor.knowledge.frame_index import frame_index

    fi = frame_index(package)
    if fi is None or release not in fi.releases:
        return False
    names = fi.files.get(site.module)
    if not isinstance(names, dict):
        return False  # a file the frame index does not cover: nothing tells
    r = fi.releases.index(release)
    owner = _owner(site.function)
    for qual, runs in names.items():
        if owner and qual.split(".")[0] != owner.split(".")[0]:
            continue
        for run in runs if isinstance(runs, list) else ():
            try:
                if int(run[0]) <= r <= int(run[1]):
                    return False
            except (TypeError, ValueError, IndexError):
                continue
    return True


def _copies(package: str, sites: tuple[Site, ...]) -> list[Site]:
    """The sites of ``package`` raising the same check as ``sites``: the same template anywhere (a
    copy in another class, or the exception type changed), or a template this close in a function
    of the same name (a copy reworded)."""
    from difflib import SequenceMatcher

    from envdoctor.knowledge.raise_sites import raise_index

    index = raise_index(package)
    if index is None:
        return list(sites)
    templates = {s.template for s in sites}
    bases = {_base(s.function) for s in sites if s.function}
    out: list[Site] = list(sites)
    tried = 0
    for i, row in enumerate(index.rows):
        template, function = str(row[1]), str(row[3])
        same = template in templates
        if not same and not (function and _base(function) in bases):
            continue
        tried += 1
        if tried > MAX_COPIES:
            break
        if not same:
            short = template[:MAX_TEMPLATE]
            if not any(
                SequenceMatcher(None, short, t[:MAX_TEMPLATE]).quick_ratio() >= MIN_SIMILAR
                and SequenceMatcher(None, short, t[:MAX_TEMPLATE]).ratio() >= MIN_SIMILAR
                for t in templates
            ):
                continue
        site = index.site(i)
        if site is not None and site not in out:
            out.append(site)
    return out


_MODEL_TYPE = re.compile(r"""['"]?model_type['"]?\s?[:=]\s?['"](?P<t>[\w-]{1,60})['"]""")


def _model_type(log: Log) -> str:
    """The model type the log's head shows (a config dump's ``'model_type': 'llama'``), or ""."""
    kind = _MODEL_TYPE.search(log.head[:262144].decode("utf-8", "replace")) if log.head else None
    return kind.group("t") if kind is not None else ""


def _class_key(name: str) -> str:
    """A config class or a model type, compared: ``StableLmConfig`` and ``stablelm``, ``OpenLlamaConfig``
    and ``open-llama``."""
    low = name.lower().replace("_", "").replace("-", "")
    return low.removesuffix("config")


def _check_name(loc: Location, copies: list[Site], tb: Traceback, log: Log) -> str:
    """The check named once: the raising frame's function where the log shows it; else, for a
    check copied into several classes, the check with its copies and the model type the log shows."""
    last = tb.frames[-1] if tb.frames else None
    if last is not None and last.package == loc.package and last.function:
        return f"{last.module_path} in {last.function}"
    owners = list(dict.fromkeys(_owner(s.function) for s in copies if _owner(s.function)))
    if len(owners) < 2:
        return loc.places()
    base = _base(loc.sites[0].function)
    shown = ", ".join(owners[:3]) + (f" and {len(owners) - 3} more" if len(owners) > 3 else "")
    worded = list(dict.fromkeys(_owner(s.function) for s in loc.sites if _owner(s.function)))
    said = f"{loc.package}' `{base}` check, copied into {len(owners)} classes ({shown})"
    if worded and len(worded) < len(owners):
        said += f"; the message has the wording of {', '.join(worded[:2])}'s copy"
    kind = _model_type(log)
    if kind and _class_key(kind) in {_class_key(o) for o in owners}:
        said += f"; the run's model_type is '{kind}': its config class's copy raised it"
    elif kind:
        said += f"; the run's model_type is '{kind}', whose config class has no copy in the releases indexed"
    else:
        said += "; the log shows neither the frame nor the model type that tell whose copy raised it"
    return said


def release_bound(tb: Traceback, log: Log) -> Bound | None:
    """The refusal's raise (every copy of its check the message matches) is in a range of the
    package's releases only: gone from the later releases (its function gone too: a lift, where the
    function stays, is TRI014's) or added to a function the earlier releases had. None where the
    check stays in the newest release indexed and came with none of them, or the index cannot
    tell."""
    from envdoctor.knowledge.raise_sites import raise_index

    loc = locate_tb(tb, log)
    if loc is None or loc.lift is not None:
        return None
    index = raise_index(loc.package)
    if index is None or not index.releases:
        return None
    last = tb.frames[-1] if tb.frames else None
    sites = loc.sites
    if last is not None and last.package == loc.package and last.module_path:
        mine = tuple(
            s for s in sites if last.module_path.endswith(s.module) or s.module.endswith(last.module_path)
        )
        sites = mine or sites  # the copy in the frame that raised
    copies = _copies(loc.package, sites)
    order = {r: i for i, r in enumerate(index.releases)}
    held = sorted({r for s in copies for r in s.releases if r in order}, key=order.__getitem__)
    if not held:
        return None
    newest = index.releases[-1]
    first_without = index.releases[order[held[-1]] + 1] if held[-1] != newest else ""
    templates = {s.template for s in sites}
    if first_without and (
        _reworded(loc.package, templates, order[first_without])
        or any(_class_gone(loc.package, s, first_without) for s in sites)
    ):
        first_without = ""  # the check reworded or moved, or its class gone: no release accepts it for sure
    earliest = min(copies, key=lambda s: order.get(s.first, 0))
    added_in = before = ""
    if earliest.added and not earliest.first_indexed and order.get(earliest.first, 0) > 0:
        added_in, before = earliest.first, index.releases[order[earliest.first] - 1]
        if _reworded(loc.package, templates, order[before]):
            added_in = before = ""  # the check was there before, in other words or another function
    if not first_without and not added_in:
        return None
    lo = added_in or held[0]
    hi = held[-1]  # the last release with any copy (the same words raised as another type count)
    refusing = lo if lo == hi else f"{lo}–{hi}"
    if earliest.first_indexed and not added_in:
        refusing = f"{hi} and earlier (the index starts at {index.releases[0]})"
    name = _check_name(loc, copies, tb, log)
    kind = _model_type(log) if last is None or last.package != loc.package else ""
    owners = {_class_key(_owner(s.function)) for s in copies if _owner(s.function)}
    if kind and owners and _class_key(kind) not in owners:
        # the copies are other models' classes (Chameleon's, Fuyu's): the run's class had its copy in
        # releases before the index (Llama's rope check before 4.43), the indexed ones accept it
        span = f"{index.releases[0]}–{newest}"
        return Bound(loc.package, name, span, index.releases[0], "", "", False, kind)
    unsure = "tell whose copy raised it" in name and bool(first_without)
    return Bound(loc.package, name, refusing, first_without, added_in, before, unsure)
