"""Installed distributions of the training stack, read from their metadata (no imports)."""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from importlib.machinery import PathFinder
from pathlib import Path

from envdoctor import pep508
from envdoctor.facts.interface import Copy, Package, normalize_name

#: The training stack whose versions and requirements envdoctor reads.
STACK = (
    "torch",
    "torchvision",
    "transformers",
    "trl",
    "vllm",
    "accelerate",
    "deepspeed",
    "peft",
    "datasets",
    "flash-attn",
    "bitsandbytes",
    "liger-kernel",
    "xformers",
    "triton",
    "nvidia-ml-py",
    "pynvml",
    "huggingface-hub",
    "tokenizers",
    "safetensors",
    "unsloth",
    "unsloth-zoo",
    "verifiers",  # wrappers over TRL's GRPOTrainer (known-failures catalogue)
)

#: distributions a feature of the run imports (rules/knowledge/optional_features.yaml) besides the
#: stack: read too, so that their absence is a fact of a live check (PKG014)
FEATURES = ("wandb", "tensorboard", "tensorboardX", "mlflow", "kernels")

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
#: ``Requires-Dist`` lines read per distribution (transformers has about 250; each costs a
#: PEP 508 parse, 20-80 µs, in the facts and again in the rules: 100,000 took over 20 s)
MAX_REQUIRES = 2_000
#: ``requires`` lines of a whole snapshot (collect writes those of the stack only)
MAX_REQUIRES_TOTAL = 20_000


#: ``extra_only`` (re-exported): a line of the commonest shape, ``name specs; extra == "x"``,
#: known valid and known to apply to extra x alone without a parse.
extra_only = pep508.extra_only


def requirement_name(line: str) -> str | None:
    """The (normalized) distribution name a ``Requires-Dist`` line is about."""
    m = _NAME.match(line)
    return normalize_name(m.group(1)) if m else None


@lru_cache(maxsize=8192)
def parse_requirement(line: str) -> pep508.Requirement | None:
    """``line`` parsed as PEP 508, or None. Cached: facts, PKG004 and the upgrade plan read the
    same ``Requires-Dist`` lines; the common shapes without packaging (``envdoctor.pep508``)."""
    if len(line) > 1000:
        return None
    try:
        return pep508.parse(line)
    except pep508.InvalidRequirement:
        return None


def requirement_problem(line: str) -> str | None:
    """Why a ``Requires-Dist`` line cannot be judged (not PEP 508, a marker that does not
    evaluate), or None: the rules only ever see lines that parse and evaluate."""
    if len(line) > 1000:
        return f"a requirement of {len(line):,} characters"
    if extra_only(line) is not None:
        return None  # valid, and its marker evaluates: no parse needed
    req = parse_requirement(line)
    try:
        if req is None:
            pep508.parse(line)  # raises, with packaging's own words
        elif req.marker is not None:
            req.marker.evaluate({"extra": ""})  # over packaging's own default environment
    except pep508.InvalidRequirement as exc:
        return f"not a PEP 508 requirement: {str(exc).splitlines()[0][:120]}"
    except Exception as exc:  # packaging raises several kinds on odd markers
        return f"its marker does not evaluate: {type(exc).__name__}: {str(exc)[:120]}"
    return None


class _Index:
    """What ``sys.path`` holds, read from folder names only: normalized name -> its
    ``*.dist-info`` folder (first on ``sys.path`` wins, as import does), and whether the standard
    library's reader could find a distribution of a given name some other way (an ``*.egg-info``,
    a versionless ``*.dist-info``, an egg, a zip on the path, a finder of its own)."""

    def __init__(self) -> None:
        self.folders: dict[str, Path] = {}
        #: the ``*.dist-info`` folders of a name in later ``sys.path`` entries than the first's
        #: (two installations: the user site and the environment's, a PYTHONPATH entry)
        self.later: dict[str, list[Path]] = {}
        self._entry: dict[str, str] = {}  # name -> the sys.path entry of its first folder
        self._other: set[str] = set()  # names as importlib.metadata normalizes them
        self._opaque = any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path)
        for entry in sys.path:
            try:
                names = os.listdir(entry or ".")
            except OSError:
                self._opaque |= os.path.isfile(entry)  # a zip: its listing is not read here
                continue
            self._opaque |= entry.lower().endswith(".egg")
            for item in names:
                low = item.lower()
                if item.endswith(".dist-info") and "-" in item:
                    name = normalize_name(item[: -len(".dist-info")].rsplit("-", 1)[0])
                    first = self._entry.setdefault(name, entry)
                    if first == entry:
                        self.folders.setdefault(name, Path(entry or ".") / item)
                    else:  # a second installation of it, in a later entry
                        self.later.setdefault(name, []).append(Path(entry or ".") / item)
                elif low.endswith((".dist-info", ".egg-info", ".egg")):
                    self._other.add(_md_name(low.rpartition(".")[0].partition("-")[0]))

    def get(self, name: str) -> Path | None:
        return self.folders.get(name)

    def elsewhere(self, name: str) -> bool:
        """Whether ``importlib.metadata`` may find ``name`` where ``folders`` does not: False
        means it would raise ``PackageNotFoundError`` (asking it costs ~0.3 ms a name, and the
        stack's packages require ~150 distributions that are not installed)."""
        return self._opaque or _md_name(name) in self._other


def _md_name(name: str) -> str:
    """A distribution name as ``importlib.metadata`` keys its folders (``Prepared.normalize``)."""
    return normalize_name(name).replace("-", "_")


def _parse_metadata(text: str) -> Package | None:
    """Version and ``Requires-Dist`` of a METADATA file: the first ``MAX_REQUIRES`` lines of
    requirements are read (a real distribution has a few hundred at most)."""
    version, requires, seen = None, [], 0
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the body is the description
        if line.startswith("Version:"):
            version = line[8:].strip()
        elif line.startswith("Requires-Dist:") and seen < MAX_REQUIRES:
            seen += 1
            if requirement_problem(line[14:].strip()) is None:  # a broken line: dropped
                requires.append(line[14:].strip())
    if not version:
        return Package(version="<unreadable: no Version field>", requires=None)
    return Package(version=version, requires=requires)


def _read(name: str, index: _Index) -> Package | None:
    """Version and requirements of one distribution; corrupt metadata is a fact, not a crash."""
    folder = index.get(normalize_name(name))
    if folder is not None:
        try:
            pkg = _parse_metadata((folder / "METADATA").read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            return Package(version=f"<unreadable: {exc.strerror or type(exc).__name__}>")
        if pkg is not None:
            pkg.origin = read_origin(folder)
        return pkg
    if not index.elsewhere(name):
        return None
    import importlib.metadata as md  # 20 ms to import: only for an egg-info or another layout

    try:  # egg-info and other layouts: the standard library's reader
        dist = md.distribution(name)
        version = dist.version
        requires = list(dist.requires or [])
    except md.PackageNotFoundError:
        return None
    except Exception as exc:
        return Package(version=f"<unreadable: {type(exc).__name__}>", requires=None)
    if not isinstance(version, str) or not version:
        version = "<unreadable: no Version field>"
    return Package(version=version, requires=requires)


def read_origin(folder: Path) -> str | None:
    """Where a distribution was installed from when not from an index: its PEP 610
    ``direct_url.json`` (a VCS URL with the commit, a local folder), or None (an index install,
    or a file that is absent or unreadable)."""
    import json

    try:
        data = json.loads((folder / "direct_url.json").read_text(encoding="utf-8")[:10_000])
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    url = str(data["url"])[:500]
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return f"{vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
    if isinstance(data.get("archive_info"), dict) and not url.startswith("file:"):
        return None  # a wheel or sdist by URL: a release's files, not a build of its own
    return url


#: the top-level import name of a distribution of the stack where it is not the name's own
_IMPORT_NAME = {"nvidia-ml-py": "pynvml", "flashinfer-python": "flashinfer"}


def _imports_from(entry: Path, dist: str) -> bool:
    """``entry`` holds the distribution's package (or module), not its metadata alone: a
    ``*.dist-info`` left behind by an uninstall is no installation."""
    top = _IMPORT_NAME.get(dist, dist.replace("-", "_"))
    return (entry / top).is_dir() or (entry / f"{top}.py").is_file()


def _path_kinds() -> tuple[str | None, set[str]]:
    """The user site on ``sys.path`` (None where it is off: PYTHONNOUSERSITE, ``-s``, a venv) and
    the PYTHONPATH entries, as ``sys.path`` spells them."""
    site = sys.modules.get("site")
    user = None
    if site is not None and getattr(site, "ENABLE_USER_SITE", False):
        user = getattr(site, "USER_SITE", None)
    paths = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    return (os.path.abspath(user) if isinstance(user, str) else None), paths


def _kind(entry: Path, user: str | None, pythonpath: set[str]) -> str:
    where = os.path.abspath(str(entry))
    if user is not None and where == user:
        return "user site"
    if where in pythonpath:
        return "PYTHONPATH"
    return "environment"


def _shown(entry: Path) -> str:
    """The entry as a snapshot writes it: the home folder as ``~`` (no user name leaves)."""
    text, home = str(entry), os.path.expanduser("~")
    if home not in ("", "~", "/") and (text == home or text.startswith(home.rstrip(os.sep) + os.sep)):
        return "~" + text[len(home.rstrip(os.sep)) :]
    return text


def _copies(name: str, pkg: Package, index: _Index) -> None:
    """Fill ``pkg``'s ``path``, ``path_kind`` and ``other_copies`` where ``name`` is installed in
    more than one ``sys.path`` entry (each holding the package, not its metadata alone)."""
    later = index.later.get(name)
    first = index.get(name)
    if not later or first is None or not _imports_from(first.parent, name):
        return
    user, pythonpath = _path_kinds()
    for folder in later:
        if not _imports_from(folder.parent, name):
            continue
        version = folder.name[: -len(".dist-info")].rsplit("-", 1)[1]
        pkg.other_copies.append(Copy(version, _shown(folder.parent), _kind(folder.parent, user, pythonpath)))
    if pkg.other_copies:
        pkg.path = _shown(first.parent)
        pkg.path_kind = _kind(first.parent, user, pythonpath)


def collect_packages(names: tuple[str, ...] = STACK) -> dict[str, Package]:
    """The stack's distributions plus the distributions they directly require."""
    index = _Index()
    found: dict[str, Package] = {}
    for name in names:
        pkg = _read(name, index)
        if pkg is not None:
            found[normalize_name(name)] = pkg
            if index.later:
                _copies(normalize_name(name), pkg, index)
    wanted = {
        req
        for pkg in list(found.values())
        for line in pkg.requires or []
        if (req := requirement_name(line)) and req not in found
    }
    for name in sorted(wanted):
        folder = index.get(name)
        if folder is not None:  # the folder name carries the version
            found[name] = Package(version=folder.name[: -len(".dist-info")].rsplit("-", 1)[1])
            continue
        pkg = _read(name, index)
        if pkg is not None:
            found[name] = Package(version=pkg.version, requires=None)
    return found
