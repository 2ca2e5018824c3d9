"""Failures other programs print, read from a log that fits in its head (a pasted excerpt, an
issue's text) when nothing else is named: lines no Python exception carries.

- **pip** (TRI020): its ``ERROR:`` lines when an install fails — a folder that is no Python
  project ("neither 'setup.py' nor 'pyproject.toml' found"), a requirement no published release
  satisfies ("Could not find a version that satisfies the requirement x==9 (from versions: …)"),
  releases that conflict ("ResolutionImpossible", with pip's "The conflict is caused by:" lines),
  an extension build that needs CUDA ("CUDA_HOME environment variable is not set", nvcc missing).
- **a device-side index assertion** (TRI021): ATen's ``indexSelect…`` / embedding kernels assert
  ``srcIndex < srcSelectDimSize`` when an index is beyond the table's rows: a token id the
  embedding does not have (a tokenizer and a model of different vocabularies, added tokens without
  ``resize_token_embeddings``); CPU's "IndexError: index out of range in self" the same.
- **the host out of memory** (TRI018): a host form of ``oomforms`` — the kernel's OOM killer
  ("Out of memory: Killed process N (python)", "oom-kill"), Slurm's memory cgroup ("Detected 1
  oom_kill event in StepId=…"), Ray's memory monitor (its message, or only its tail) — an error
  unless the program retries it or the run went on; a process killed by SIGKILL (exit -9 / 137)
  without one is only likely that (a warning).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match

MAX_LINES = 4000  # lines of the head looked at

_NOT_PROJECT = re.compile(
    r"ERROR: (?P<path>\S{1,1000}) does not appear to be a Python project: neither 'setup\.py' nor "
    r"'pyproject\.toml' found"
)
_NO_VERSION = re.compile(
    r"ERROR: Could not find a version that satisfies the requirement (?P<req>[^\s;]{1,300})"
    r"(?P<marker>;[^(]{0,300})?(?:\s?\((?!from versions)[^)]{0,300}\))*"
    r"(?:\s?\(from versions: (?P<versions>[^)]{0,3000})\))?"
)
_CONFLICT = re.compile(
    r"ERROR: (?:Cannot install (?P<what>.{1,500}?) because these package versions have "
    r"conflicting dependencies|ResolutionImpossible)"
)
_CAUSED_BY = re.compile(
    r"^\s{0,8}(?P<pkg>[A-Za-z][\w.\-]{0,80}) (?P<ver>[\w.+\-]{1,40}) depends on (?P<dep>.{1,200})$"
)
_CUDA_HOME = re.compile(
    r"OSError: CUDA_HOME environment variable is not set|(?:No such file or directory|not found)[:,]? "
    r"'?(?:/\S{0,300}/)?nvcc'?|nvcc: (?:command )?not found"
)
_BUILD = re.compile(r"Failed (?:to )?build(?:ing wheel for)? (?P<pkg>[A-Za-z][\w.\-]{0,80})")
_INDEX_ASSERT = re.compile(
    r"(?P<kernel>index\w{0,40}|\w{0,40}[Ee]mbedding\w{0,40})?[^`\n]{0,200}Assertion `(?P<cond>srcIndex < "
    r"srcSelectDimSize|idx_dim >= 0 && idx_dim < index_size|index >= -sizes\[i\] && index < sizes\[i\])"
    r"[^`]{0,80}` "
    r"failed|IndexError: index out of range in self"
)
_KILLED = re.compile(r"Killed process (?P<pid>\d{1,9}) \((?P<comm>[^)]{1,60})\)")
#: a memory monitor's kill that the program retries (Ray's "… so the task will be retried", its message's
#: lines after it): not the end
_RETRIED = re.compile(r"will be retried|retries remaining")
_SIGKILL = re.compile(
    r"exitcode\s{0,4}: -9\b|Signal 9 \(SIGKILL\) received|died with <Signals\.SIGKILL: 9>|"
    r"killed by signal 9|exit(?:ed with)? (?:code|status) 137\b|return code -9\b|\bsignal: killed\b|"
    r"^Killed$|exitcode: -9\b"
)


#: pip's report after an install that left a package's requirement broken (the install itself went on)
_INSTALLED_CONFLICT = re.compile(
    r"(?P<pkg>[A-Za-z][\w.\-]{0,80}) (?P<ver>[\w.+!\-]{1,40}) requires (?P<dep>[A-Za-z][\w.\-]{0,80})"
    r"(?P<spec>[^,\s]{0,80}(?:,[<>=!~][^,\s]{0,40}){0,6}), but you have (?P=dep) (?P<have>[\w.+!\-]{1,40}) "
    r"which is incompatible"
)
_CRASH = re.compile(r"^(?:\[rank\d{1,5}\]:\s?)?(?:[\w.]{1,80}(?:Error|Exception)): ")


def _installed_conflict(no: int, found: re.Match[str], lines: list[str], log: Log) -> Draft | None:
    """pip's "X v requires Y<spec>, but you have Y w which is incompatible" (TRI020): the install
    went on with a set that breaks X's declared requirement, one of the two a package of the stack
    (traceback.PACKAGES) and no training steps after it (None otherwise). An error where the log then fails in
    the code of one of the two (a frame of X's or Y's package, or their name in the exception), a
    warning where it shows no such failure (many such pairs still import)."""
    from envdoctor.triage.missing import went_on
    from envdoctor.triage.traceback import PACKAGES

    pkg, ver, dep, spec, have = (found.group(k) for k in ("pkg", "ver", "dep", "spec", "have"))
    mods = {pkg.lower().replace("-", "_"), dep.lower().replace("-", "_")}
    if not mods & set(PACKAGES) or went_on(log, no):
        return None  # a pair outside the training stack (a notebook's own), or a run that trained on
    crashed = any(
        _CRASH.match(x.strip())
        or any(f"/{m}/" in x for m in mods)
        and ('File "' in x or "site-packages" in x)
        for x in lines[no : no + MAX_LINES]
    )
    what = (
        f"pip installed {dep} {have}, which {pkg} {ver} does not accept (it requires {dep}{spec}): pip "
        "reported the broken requirement and went on, so the environment holds a pair its own authors "
        "declare incompatible" + ("; the run then failed" if crashed else "")
    )
    fix = (
        f"install the {dep} that {pkg} {ver} requires (pip install '{dep}{spec}'), or the {pkg} release "
        f"made for {dep} {have}; then pip check shows no broken requirement"
    )
    d = finding("TRI020", [_match(no, found.group(0), lines)], log, what, fix, requirement=f"{dep}{spec}")
    return at_severity(d, Severity.ERROR if crashed else Severity.WARNING)


def _match(sig_line: int, body: str, lines: list[str]) -> Match:
    from envdoctor.triage.signatures import signatures

    sig = next(x for x in signatures() if x.id == "unrecognized-exception")
    return Match(sig, sig_line, body[:1000], {}, None, tuple(lines[max(0, sig_line - 41) : sig_line - 1]))


def _pinned_gap(req: str, have: list[str]) -> tuple[str, str, str, str] | None:
    """(name, version, the listed release just below it, the nearest final release listed above it)
    where ``req`` pins one release exactly (``tensordict==0.6.2``) that lies between the oldest and
    the newest release pip listed without being one of them: pip lists every release with a file it
    may install here, so such a release most likely exists with none that fits (a version past the
    newest is more likely never published)."""
    found = re.fullmatch(r"([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?==([\w.+!-]+)", req.strip())
    pinned = versions.parse(found.group(2)) if found is not None else None
    listed = sorted(v for v in map(versions.parse, have) if v is not None)
    if found is None or pinned is None or len(listed) < 2 or pinned in listed:
        return None
    if not listed[0] < pinned < listed[-1]:
        return None
    below = max(v for v in listed if v < pinned)
    above = [v for v in listed if v > pinned]
    nearest = next((v for v in above if not v.is_prerelease), above[0])
    return found.group(1), found.group(2), str(below), str(nearest)


def _newest_final(have: list[str]) -> str:
    """The newest release pip listed that is not a pre-release (``0.0.29.post3`` over
    ``0.0.30.dev1002``), else the last listed."""
    finals = [v for v in map(versions.parse, have) if v is not None and not v.is_prerelease]
    return str(max(finals)) if finals else have[-1]


def _pip(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _NOT_PROJECT.search(body)
    if found is not None:
        path = found.group("path").removeprefix("file://")
        parent = path.rstrip("/").rsplit("/", 1)[0] or "/"
        what = (
            f"pip install failed: {path} holds no setup.py nor pyproject.toml, so pip cannot install it "
            "as a Python project (an install instruction run from the wrong folder, or a checkout that "
            "lacks the project's files)"
        )
        fix = (
            f"run the install from the folder that holds the project's setup.py or pyproject.toml "
            f"(often the repository's root: pip install -e {parent}), or check out the files it lacks"
        )
        return at_severity(
            finding("TRI020", [_match(no, body, lines)], log, what, fix, path=path), Severity.ERROR
        )
    found = _NO_VERSION.search(body)
    if found is not None:
        req = found.group("req")
        have = [
            v.strip() for v in (found.group("versions") or "").split(",") if v.strip() and v.strip() != "none"
        ]
        what = f"pip install failed: no release of {req} that pip may install here satisfies the requirement"
        if found.group("versions") is not None:
            what += (
                f" (releases it found: {'… ' if len(have) > 6 else ''}"
                f"{', '.join(have[-6:]) if have else 'none'})"
            )
        gap = _pinned_gap(req, have)
        if gap is not None:
            name, pinned, below, above = gap
            what += (
                f": {pinned} lies between releases pip lists ({below} and {above}), so most likely it was "
                "published with no file that fits this Python or platform (wheels only, none for "
                "linux-aarch64 or a new Python), "
                "else it was never released (the project's release list tells)"
            )
            fix = (
                f"build {name} {pinned} from its source (the project's tag v{pinned}: pip install . in a "
                f"checkout of it), or run on a Python and platform its wheels are built for; a release pip "
                f"lists (e.g. {above}) only where what pins {name}=={pinned} supports it"
            )
            return at_severity(
                finding("TRI020", [_match(no, body, lines)], log, what, fix, requirement=req), Severity.ERROR
            )
        what += (
            ": the version was never published, or none of its wheels fits this Python, platform or "
            "index (--index-url, a CUDA wheel index)"
        )
        fix = (
            f"require a release pip lists (e.g. {_newest_final(have)})"
            if have
            else "check the package's name and index"
        ) + " or install from the index that publishes it, with a Python its wheels are built for"
        return at_severity(
            finding("TRI020", [_match(no, body, lines)], log, what, fix, requirement=req), Severity.ERROR
        )
    found = _CONFLICT.search(body)
    if found is not None:
        caused = []
        for later in lines[no : no + 30]:
            row = _CAUSED_BY.match(later)
            if row is not None:
                caused.append(f"{row.group('pkg')} {row.group('ver')} depends on {row.group('dep').strip()}")
        what = "pip could not resolve the requirements: they conflict" + (
            f" — {'; '.join(caused[:4])}"
            if caused
            else " (pip's 'The conflict is caused by:' lines name them)"
        )
        fix = (
            "loosen or change one side of the conflict so that one release of each package satisfies all "
            "(pin the package whose requirement is strictest to a release that agrees with the others)"
        )
        return at_severity(
            finding("TRI020", [_match(no, body, lines)], log, what, fix, conflict=caused or None),
            Severity.ERROR,
        )
    found = _INSTALLED_CONFLICT.search(body)
    if found is not None:
        return _installed_conflict(no, found, lines, log)  # None for a pair outside the stack
    found = _CUDA_HOME.search(body)
    if found is not None:
        built = next((b.group("pkg") for x in lines[no : no + 200] if (b := _BUILD.search(x))), "")
        what = (
            f"building {built or 'a CUDA extension'} from source needs the CUDA toolkit (nvcc, CUDA_HOME), "
            "which this environment does not have: pip found no prebuilt wheel for this torch, CUDA and "
            "Python, and fell back to compiling"
        )
        fix = (
            "install a prebuilt wheel that matches the installed torch, CUDA and Python (the project's "
            "release page), or install the CUDA toolkit of torch's CUDA version and set CUDA_HOME to it "
            "before pip install"
        )
        return at_severity(
            finding("TRI020", [_match(no, body, lines)], log, what, fix, package=built or None),
            Severity.ERROR,
        )
    return None


def _index(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _INDEX_ASSERT.search(body)
    if found is None:
        return None
    what = (
        "an index beyond a table's rows reached a lookup (an embedding or index_select: "
        f"{found.group('cond') or 'index out of range in self'}): in training that is a token id the "
        "model's embedding does not have — a tokenizer of another vocabulary than the model (a "
        "reference, reward or SFT model of another family than the policy), or tokens added to the "
        "tokenizer without resizing the embedding — or a position past the model's "
        "max_position_embeddings, where the model learns its positions (GPT-2's 1,024, OPT's 2,048): "
        "prompt plus generated tokens longer than that table"
    )
    fix = (
        "give every model of the run (policy, reference, reward, value) the tokenizer of its own family, "
        "or one vocabulary for all; after adding tokens call model.resize_token_embeddings(len(tokenizer)); "
        "keep prompt + completion lengths (max_length / max_new_tokens, max_prompt_length + "
        "max_completion_length) within the model's max_position_embeddings; "
        "CUDA_LAUNCH_BLOCKING=1 shows the failing lookup's line"
    )
    return at_severity(finding("TRI021", [_match(no, body, lines)], log, what, fix), Severity.ERROR)


def _host_oom(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    from envdoctor.triage.missing import went_on
    from envdoctor.triage.oom import levers
    from envdoctor.triage.oomforms import HOST_LEVERS, find

    form = find(body, memory="host")
    retried = any(_RETRIED.search(x[:4096]) for x in [*lines[max(0, no - 20) : no - 1], body])
    if form is not None and not retried and not went_on(log, no):
        killed = _KILLED.search(body)
        who = f" process {killed.group('pid')} ({killed.group('comm')})" if killed else ""
        what = (
            f"{form.allocator} killed{who or ' processes of the job'}: the machine ran out of host "
            "memory (RAM, not GPU memory)"
        )
        return at_severity(
            finding(
                "TRI018",
                [_match(no, body, lines)],
                log,
                what,
                levers(form),
                host_oom=form.id,
                oom_form=form.id,
            ),
            Severity.ERROR,
        )
    found = _SIGKILL.search(body)
    if found is not None:
        what = (
            "a process was killed by SIGKILL (exit -9 / 137) with no exception of its own: most often the "
            "kernel's OOM killer, the host having run out of RAM (also a scheduler's or a container's memory "
            "limit, or a kill by hand)"
        )
        fix = (
            "look for 'Out of memory: Killed process' in the system log (dmesg, journalctl -k), Slurm's "
            "'oom_kill event' or the container's OOMKilled status; if so, " + HOST_LEVERS
        )
        d = finding("TRI018", [_match(no, body, lines)], log, what, fix, host_oom="sigkill")
        return at_severity(d, Severity.WARNING)
    return None


def from_head(head: bytes, log: Log, killed_ok: bool = True) -> Draft | None:
    """The first failure of this module's kinds in the head (module docstring), or None;
    ``killed_ok``: a bare SIGKILL may answer (no other exception, or only a wrapper's re-raise)."""
    from envdoctor.triage.scanner import clean, split_prefix

    if not head:
        return None
    lines = head.decode("utf-8", errors="replace").split("\n")[:MAX_LINES]
    killed: Draft | None = None
    for no, raw in enumerate(lines, 1):
        if not any(
            k in raw
            for k in (
                "ERROR",
                "CUDA_HOME",
                "nvcc",
                "Assertion",
                "index out of range",
                "oom",
                "Out of memory",
                "out of memory",
                "memory limit",
                "-9",
                "SIGKILL",
                "137",
                "signal",
                "Killed",
                "which is incompatible",
            )
        ):
            continue
        body = split_prefix(clean(raw[:4096].encode()))[0].strip()
        found = _pip(no, body, lines, log) or _index(no, body, lines, log)
        if found is not None:
            return found
        oom = _host_oom(no, body, lines, log)
        if oom is not None and oom.finding.severity == Severity.ERROR:
            return oom
        killed = killed or oom
    return killed if killed_ok else None


MAX_UNANCHORED = 20  # lines tried per signature keyword


def unanchored(head: bytes, log: Log, judge: Callable[[list[Match], Log], list[Draft]]) -> Draft | None:
    """A line of one of envdoctor's own signatures that no anchor found (a message a wrapper
    re-words without "Error": "vLLMAsyncRollout _loop_forever error: Free memory on device on
    startup is less than …"), in a log that fits in its head: the signature's own handler
    (``judge``: diagnose's handlers) judges it."""
    from envdoctor.triage.missing import went_on
    from envdoctor.triage.scanner import clean, split_prefix
    from envdoctor.triage.signatures import own_signatures

    seen = {m.line_no for ms in log.by_sig.values() for m in ms}
    lines: list[str] | None = None
    for sig in own_signatures():
        if sig.fallback or sig.hint or sig.rule == "TRI011":
            continue
        for kw in sig.keywords:
            if kw not in head:
                continue
            if lines is None:
                lines = head.decode("utf-8", errors="replace").split("\n")[:MAX_LINES]
            text = kw.decode("utf-8", errors="replace")
            tried = 0
            for no, raw in enumerate(lines, 1):
                if text not in raw or no in seen:
                    continue
                tried += 1
                body = split_prefix(clean(raw[:4096].encode()))[0].strip()
                found = sig.pattern.search(body)
                if found is not None and not went_on(log, no):  # steps after it: quoted words
                    groups = {k: v for k, v in found.groupdict().items() if v is not None}
                    m = Match(sig, no, body[:1000], groups, None, tuple(lines[max(0, no - 41) : no - 1]))
                    drafts = [d for d in judge([m], log) if not d.rejected]
                    if drafts:
                        return drafts[0]
                if tried >= MAX_UNANCHORED:
                    break
    return None
