"""The package versions a log shows itself: what the failed run had installed.

Read from the head of the log (``HEAD`` bytes: where ``pip list``, ``pip freeze``, ``trl env``,
``vllm collect-env`` / ``python -m torch.utils.collect_env`` and install output usually stand) and
from the lines anywhere in it that the scan's ``package-version`` and ``vllm-version`` hints found
(vLLM's start banners, ``Successfully installed …``, wheel names, ``….dist-info``). A path
``…/site-packages/trl/…`` names no version and is not read. Every pattern is linear-time (each
starts with a literal or is anchored, every quantifier bounded) and each line is cut at
``MAX_LINE`` characters.

Which wins when a package shows several times: a banner of the running program (vLLM's engine or
API server) over a report of the environment (``trl env``, collect-env, install output) over a
listing (pip list/freeze, a wheel or dist-info name); among equals the last one in the log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from envdoctor.facts.interface import Facts, Package, normalize_name
from envdoctor.facts.packages import STACK
from envdoctor.triage.interface import HEAD

MAX_LINE = 4096

#: The distributions whose versions advice and confirmation read (PEP 503 names), and the other
#: spellings logs use for them.
NAMES = (
    *STACK,
    # only in logs: what the stack's own reports print beside it
    "torchaudio",
    "flashinfer-python",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu11",
    "numpy",
    # RL stacks on vLLM whose own trainers and weight sync a log's traceback shows
    "openrlhf",
    "verl",
    "nemo-rl",
    "ms-swift",
    "skyrl-train",
    # packages with a symbol history whose drift a log shows (rules/knowledge/symbols/)
    "torchao",
    "sglang",
)
ALIASES = {
    "pytorch": "torch",
    "hf-hub": "huggingface-hub",
    "flashinfer": "flashinfer-python",
    "liger": "liger-kernel",
    "deep-speed": "deepspeed",
}

_VER = r"(?P<version>\d{1,4}(?:\.\d{1,6}){1,3}(?:\.?(?:post|rc|dev|a|b)\d{0,9})?(?:\+[\w.]{1,40})?)"
BANNER = re.compile(r"(?:LLM engine \(v|vLLM API server version |vLLM version:? v?)" + _VER)
#: "- TRL version: 0.17.0" (trl env), "vLLM Version: 0.8.5" / "vLLM Version  : 0.10.1" and
#: "PyTorch version: 2.6.0+cu124" (collect-env)
REPORT = re.compile(
    r"^[-*]? {0,4}(?P<name>[A-Za-z][\w-]{0,30}(?: [A-Za-z][\w-]{0,30})?) "
    r"[Vv]ersion {0,40}: {0,8}v?" + _VER
)
#: "trl==0.25.0" (pip freeze), "[pip3] torch==2.6.0+cu124" (collect-env)
FREEZE = re.compile(r"(?:^|\[pip3?\] |[\s`'\"(])(?P<name>[A-Za-z][\w.-]{0,60})==" + _VER)
#: "trl=0.18.0, vllm=0.8.5.post1", "trl[vllm]=0.19.0" (versions as people write them in a report)
SINGLE = re.compile(
    r"(?:^|[\s,;(`])(?P<name>[A-Za-z][\w.-]{0,60})(?:\[[\w,.-]{1,40}\])?=(?!=)v?" + _VER + r"(?![\w.])"
)
#: "trl                0.25.0" (pip list), "[conda] torch   2.6.0   pypi_0   pypi" (collect-env)
LISTING = re.compile(r"^(?:\[conda\] {1,8})?(?P<name>[A-Za-z][\w.-]{0,60}) {1,80}" + _VER + r"(?: |$)")
#: vllm-0.12.0-cp38-abi3-manylinux1_x86_64.whl, trl-0.25.0.dist-info, flash_attn-2.7.4.post1+cu12…
WHEEL = re.compile(
    r"(?:^|[\s/=(\"'])(?P<name>[A-Za-z][\w.]{0,60}?)-" + _VER + r"(?:\.dist-info|-(?:cp|py)\d)"
)
#: Unsloth's start banner: "Unsloth 2025.3.6: Fast Qwen2 patching. Transformers: 4.48.2. vLLM: 0.7.3."
UNSLOTH = re.compile(
    r"Unsloth (?P<version>\d{4}\.\d{1,2}\.\d{1,3}): Fast [\w.-]{1,40} patching\. "
    r"Transformers: (?P<tf>\d{1,4}(?:\.\d{1,6}){1,3})(?:[\w.+]{0,20})\.(?: {1,4}vLLM: "
    r"(?P<vllm>\d{1,4}(?:\.\d{1,6}){1,3}(?:\.?post\d{1,3})?))?"
)
#: the rest of Unsloth's banner and its patch line: "O^O/ \\_/ \\    Torch: 2.6.0+cu124. CUDA: 8.9. …",
#: "Bfloat16 = TRUE. FA [Xformers = 0.0.29.post3. FA2 = False]", "Unsloth 2026.1.4 patched 28 layers …"
UNSLOTH_MORE = re.compile(
    r"(?P<key>Torch: |Triton: |Xformers = |Unsloth (?=\d{4}\.\d{1,2}\.\d{1,3} patched ))"
    + _VER
    + r"(?:\.(?: |$)| patched |$)"
)
#: what datasets and transformers print at import: "PyTorch version 2.7.0 available."
AVAILABLE = re.compile(r"\bPyTorch version " + _VER + r" available")
#: a package of ``NAMES`` and its version in a sentence: "transformers 4.38.1, accelerate 0.23.0,
#: torch2.2.1+cu121", "with vLLM v0.8.5 and TRL 0.17" (the name spelled out, two components at
#: least, nothing word-like glued after the version)
PROSE = re.compile(
    r"(?:^|(?<=[\s,;:(\[`'\"]))(?P<name>"
    + "|".join(
        sorted(
            {re.escape(n) for n in (*NAMES, *ALIASES)} | {re.escape(n.replace("-", "_")) for n in NAMES},
            key=len,
            reverse=True,
        )
    )
    + r") ?v?"
    + _VER
    + r"(?![\w+-]|\.\w)",  # a sentence's full stop may follow
    re.IGNORECASE,
)
#: words before a prose version that make it a bound, not the run's release: "added since PyTorch
#: 2.4", "removed in transformers 5.0", "requires vllm 0.8.5", "upgrade to trl 0.19.0"
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:since|before|after|than|from|until|till|below|above|prior to|starting with|requires?|"
    r"required|needs?|needed|least|most|(?:up|down)grad(?:e|ed|ing) to|(?:added|introduced|removed|"
    r"fixed|deprecated|changed|released|available|supported) (?:in|with|on|from))|[<>=~!]=?) ?$",
    re.IGNORECASE,
)
INSTALLED = re.compile(r"Successfully installed (?P<list>[^\n]{1,8000})")
#: pip's "Requirement already satisfied: accelerate in /path/site-packages (1.9.0)" (a requirement
#: "(from torch)" before the version is another package's: still this one's release)
SATISFIED = re.compile(
    r"^Requirement already satisfied: (?P<name>[A-Za-z][\w.-]{0,60})(?:\[[\w,-]{1,60}\])?"
    r"(?:[<>=!~][^ ]{0,60})? in \S[^\n]{0,400}\((?P<version>\d[\w.+!-]{0,40})\)\s*$"
)


@dataclass(frozen=True)
class LogVersion:
    """A version the log shows: where (line number, 0 when unknown) and how it said it."""

    version: str
    line: int
    #: "banner", "report", "listing", "prose" (a name and its version in a sentence) or "frames"
    #: (inferred from a traceback's frames)
    how: str
    #: for ``frames``: the oldest release the frames fit (``version``: the newest), whether
    #: ``version`` is the newest release envdoctor knows (the run may have a later one), and the
    #: frames that placed it
    low: str = ""
    newest: bool = False
    frames: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        return {"banner": 4, "report": 3, "listing": 2, "prose": 1}.get(self.how, 0)

    @property
    def inferred(self) -> bool:
        """Inferred from the traceback's frames, not shown by the log."""
        return self.how == "frames"

    @property
    def exact(self) -> bool:
        """One release: shown by the log, or the only one its frames fit."""
        return not self.inferred or (self.low in ("", self.version) and not self.newest)

    def range_text(self) -> str:
        """``0.19.0``, ``0.18.0 to 0.19.1``, ``1.9.0 or newer``."""
        if not self.inferred:
            return self.version
        text = self.version if self.low in ("", self.version) else f"{self.low} to {self.version}"
        return text + (" or newer" if self.newest else "")


def dist_name(name: str) -> str | None:
    """The PEP 503 name of a package the log names, if it is one advice reads."""
    key = normalize_name(name.strip())
    key = ALIASES.get(key, key)
    return key if key in NAMES else None


def _add(found: dict[str, LogVersion], name: str, version: str, line: int, how: str) -> None:
    dist = dist_name(name)
    if dist is None:
        return
    old = found.get(dist)
    new = LogVersion(version, line, how)
    if old is None or new.rank > old.rank or new.rank == old.rank and line >= old.line:
        found[dist] = new


def read_line(text: str, line: int, found: dict[str, LogVersion], head: bool = False) -> None:
    """The versions one line shows, added to ``found``; ``head``: the line is in the log's head,
    where bare listings (``pip list``) are read too."""
    text = text[:MAX_LINE].strip()
    for b in BANNER.finditer(text):
        _add(found, "vllm", b.group("version"), line, "banner")
    unsloth = UNSLOTH.search(text)
    if unsloth:
        _add(found, "unsloth", unsloth.group("version"), line, "banner")
        _add(found, "transformers", unsloth.group("tf"), line, "banner")
        if unsloth.group("vllm"):
            _add(found, "vllm", unsloth.group("vllm"), line, "banner")
    for more in UNSLOTH_MORE.finditer(text):
        key = more.group("key")
        name = {"To": "torch", "Tr": "triton", "Xf": "xformers"}.get(key[:2], "unsloth")
        _add(found, name, more.group("version"), line, "banner")
    available = AVAILABLE.search(text)
    if available:
        _add(found, "torch", available.group("version"), line, "report")
    report = REPORT.match(text)
    if report:
        _add(found, report.group("name").replace(" ", "-"), report.group("version"), line, "report")
    for f in (*FREEZE.finditer(text), *WHEEL.finditer(text), *SINGLE.finditer(text)):
        _add(found, f.group("name"), f.group("version"), line, "listing")
    for p in PROSE.finditer(text):
        if not _BOUND_BEFORE.search(text[max(0, p.start() - 40) : p.start()]):
            _add(found, p.group("name"), p.group("version"), line, "prose")
    installed = INSTALLED.search(text)
    if installed:
        for item in installed.group("list").split():
            name, _, version = item.rpartition("-")
            if name and re.fullmatch(_VER, version):
                _add(found, name, version, line, "report")
    satisfied = SATISFIED.match(text)
    if satisfied:  # an earlier "Successfully installed" (a report) of a new release stays
        _add(found, satisfied.group("name"), satisfied.group("version"), line, "listing")
    listing = LISTING.match(text) if head else None
    if listing:
        _add(found, listing.group("name"), listing.group("version"), line, "listing")


#: ``pip show NAME``: "Name: trl" and, on the next line, "Version: 0.17.0"
PIP_SHOW_NAME = re.compile(r"^Name: (?P<name>[A-Za-z][\w.-]{0,60})$")
PIP_SHOW_VERSION = re.compile(r"^Version: " + _VER + "$")

_HEAD_KEYS = (
    b".egg/",  # an egg's folder in a frame's path: …/site-packages/vllm-0.8.5-py3.10-linux-x86_64.egg/vllm/…
    b"==",
    b"ersion",
    b".dist-info",
    b".whl",
    b"Successfully installed",
    b"Requirement already satisfied: ",
    b"LLM engine (v",
    b"Unsloth 2",
    b"Torch: ",
    b"Xformers = ",
)


#: a line that may name a version in prose: a digit right after a name ``PROSE`` reads (its
#: names, case-blind, then a space or "v"): the same names, as bytes
_PROSE_HINT = re.compile(PROSE.pattern.split(r") ?v?")[0].encode() + rb") ?v?\d", re.IGNORECASE)


def read_head(data: bytes) -> dict[str, LogVersion]:
    """The versions the first ``HEAD`` bytes of a log show (a cut last line is left out)."""
    from envdoctor.triage.scanner import clean, split_prefix

    data = data[:HEAD]
    if len(data) == HEAD:
        data = data[: data.rfind(b"\n") + 1]
    found: dict[str, LogVersion] = {}
    starts = (
        {n.encode() for n in NAMES} | {n.replace("-", "_").encode() for n in NAMES} | {b"[conda]", b"[pip"}
    )
    shown: tuple[int, str] | None = None  # the line and name of pip show's last "Name: …"
    for i, raw in enumerate(data.split(b"\n"), start=1):
        piece = raw.rsplit(b"\r", 1)[-1][:MAX_LINE]
        if piece.startswith((b"Name: ", b"Version: ")):
            shown = _pip_show(split_prefix(clean(piece))[0], i, shown, found)
        head_word = piece.lstrip()[:20].split(b" ", 1)[0].lower()
        listing = head_word in starts
        if (
            not listing
            and not _PROSE_HINT.search(piece)
            and not any(k in piece for k in _HEAD_KEYS)
            and not (b"=" in piece and any(n + b"=" in piece or n + b"[" in piece for n in starts))
        ):
            continue
        body = split_prefix(clean(piece))[0]
        read_line(body, i, found, head=listing)
    return found


def _pip_show(
    text: str, line: int, shown: tuple[int, str] | None, found: dict[str, LogVersion]
) -> tuple[int, str] | None:
    """``pip show``'s "Name: X" line (remembered) and the "Version: V" line right after it."""
    name = PIP_SHOW_NAME.match(text)
    if name:
        return line, name.group("name")
    version = PIP_SHOW_VERSION.match(text)
    if version and shown is not None and shown[0] == line - 1:
        _add(found, shown[1], version.group("version"), line, "report")
    return None


def from_log(head: bytes, lines: Iterable[tuple[int, str]] = ()) -> dict[str, LogVersion]:
    """The log's versions: its head, then the ``(line number, text)`` of the scan's version hints."""
    found = read_head(head)
    for line_no, text in lines:
        read_line(text, line_no, found)
    return found


def describe(found: dict[str, LogVersion]) -> str:
    """``trl 0.25.0 (line 3), vllm 0.12.0 (line 40)`` — what the report says the versions are."""
    return ", ".join(
        f"{d} {v.range_text()} (inferred from the traceback's frames)"
        if v.inferred
        else f"{d} {v.version}" + (f" (line {v.line})" if v.line else "")
        for d, v in sorted(found.items(), key=lambda kv: (kv[1].line, kv[0]))
    )


def shown(found: Mapping[str, LogVersion]) -> dict[str, LogVersion]:
    """The versions that name one release: those the log shows, and those its frames fit alone
    (a range inferred from frames is no version to check a release's rule against)."""
    return {d: v for d, v in found.items() if v.exact}


def facts_for_advice(facts: Facts | None, found: dict[str, LogVersion]) -> Facts | None:
    """The facts that advice and confirmation read: with the log's versions when it shows any.

    A snapshot (``--facts``: the node that ran the job) keeps its packages, and the log's versions
    replace those it names; the live machine's packages are dropped altogether when the log shows
    versions (this machine did not run the job); without versions in the log the facts stay.
    """
    found = shown(found)
    if not found:
        return facts
    base = facts if facts is not None else Facts(source="log")
    packages = dict(base.packages) if base.source not in ("live", "log") else {}
    for dist, v in found.items():
        packages[dist] = Package(version=v.version, requires=None)
    extra = {**base.extra, "log_versions": {d: (v.version, v.line) for d, v in found.items()}}
    return replace(base, packages=packages, extra=extra)
