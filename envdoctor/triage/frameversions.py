"""The releases a run had, inferred from its traceback's frames when the log shows no version.

A frame inside a package (its file, line, function and, when the log prints it, the source line)
fits only the releases whose file has that function spanning that line with that text on it
(rules/knowledge/frames/, scripts/derive_frame_index.py). The releases every frame of a package
fits are the range the run's version lies in: ``LogVersion(how="frames")``, the newest of them as
its version, the oldest as ``low``, the frames as evidence. A frame the index cannot place (a file
or function it does not know) leaves the range as it is; frames that fit no release together (a
checkout between releases, a patched file) give no range.

Read only for the failing lines whose kept lines hold a frame of a package envdoctor has an index
of, and only those packages' index files are loaded; a version the log shows always wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from envdoctor.knowledge.frame_index import frame_index, packages
from envdoctor.triage.interface import Match
from envdoctor.triage.logversions import LogVersion
from envdoctor.triage.traceback import Frame, parse

MAX_MATCHES = 12  # failing lines whose frames are read
MAX_EVIDENCE = 4  # frames named in the evidence
#: distribution -> the folder its import package has in a path (``…/unsloth_zoo/vllm_utils.py``)
_IMPORT = {"unsloth-zoo": "unsloth_zoo"}


def _folder(dist: str) -> str:
    return _IMPORT.get(dist, dist.replace("-", "_"))


def _own(f: Frame, have: tuple[str, ...]) -> tuple[str, str] | None:
    """The (package, path inside it) of a frame in a package with an index: its site-packages
    place, or a source checkout's folder of that package (``…/src/llamafactory/train/x.py``)."""
    if f.package in have:
        return f.package, f.module_path
    if f.package is None:
        path = f.path.replace("\\", "/")
        for dist in have:
            i = path.rfind(f"/{_folder(dist)}/")
            if i >= 0:
                return dist, path[i + len(_folder(dist)) + 2 :]
    return None


def _frames(matches: Sequence[Match], have: tuple[str, ...]) -> dict[str, list[tuple[str, Frame, int]]]:
    """Per package with an index: (path inside it, frame, log line) of the failing lines' frames."""
    # a path in the package: absolute (``…/trl/…``), relative (``File "areal/…``) or Windows'
    needles = tuple(n for d in have for n in (f"/{_folder(d)}/", f'"{_folder(d)}/', f"\\{_folder(d)}\\"))
    out: dict[str, list[tuple[str, Frame, int]]] = {}
    read = 0
    for m in matches:
        if read >= MAX_MATCHES:
            break
        if not m.context or not any(n in line for line in m.context for n in needles):
            continue
        read += 1
        for tb in parse([*m.context, m.text], m.line_no):
            for t in (tb, *tb.chain):
                for f in t.frames:
                    own = _own(f, have)
                    if own is not None:
                        out.setdefault(own[0], []).append((own[1], f, m.line_no))
    return out


def infer(matches: Sequence[Match], shown: Iterable[str] = ()) -> dict[str, LogVersion]:
    """The release range of each package the failing lines' frames place, except those in
    ``shown`` (versions the log shows)."""
    have = tuple(p for p in packages() if p not in set(shown))
    if not have:
        return {}
    out: dict[str, LogVersion] = {}
    for dist, rows in _frames(matches, have).items():
        index = frame_index(dist)
        if index is None or not index.releases:
            continue
        common: frozenset[int] | None = None
        used: list[str] = []
        seen: set[tuple[str, str, int, str]] = set()
        line_no = 0
        for module, f, at in rows:
            key = (module, f.function, f.line, f.code)
            if key in seen or f.function.startswith("<"):
                continue
            seen.add(key)
            fits = index.fits(module, f.function, f.line, f.code)
            if fits is None:
                continue
            common = fits if common is None else common & fits
            line_no = line_no or at
            where = f"{module}:{f.line} in {f.function}" + (f" ({f.code.strip()[:80]})" if f.code else "")
            used.append(where)
            if not common:
                break
        if not common:
            continue
        lo, hi = min(common), max(common)
        out[dist] = LogVersion(
            index.releases[hi],
            line_no,
            "frames",
            low=index.releases[lo],
            newest=hi == len(index.releases) - 1,
            frames=tuple(used[:MAX_EVIDENCE]),
        )
    return out


def with_inferred(matches: Sequence[Match], found: Mapping[str, LogVersion]) -> dict[str, LogVersion]:
    """``found`` (the versions the log shows) and, for the packages it does not show, the ranges
    the failing lines' frames place."""
    inferred = infer(matches, found)
    return {**inferred, **found}
