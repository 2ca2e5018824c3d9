"""What envdoctor knows about a machine: plain data, serializable to a snapshot.

Collectors (``packages``, ``gpus``, ``environment``) fill these; rules only read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA = "envdoctor.facts/1"


@dataclass
class GpuProcess:
    pid: int
    name: str = ""
    used_mib: int | None = None


@dataclass
class Gpu:
    """One physical GPU. ``index`` is NVML's (PCI bus order)."""

    index: int
    uuid: str = ""
    name: str = ""
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    memory_free_mib: int | None = None
    compute_capability: str | None = None
    mig: bool = False
    mig_devices: list[str] = field(default_factory=list)
    pci_bus_id: str = ""
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def free_mib(self) -> int | None:
        if self.memory_free_mib is not None:
            return self.memory_free_mib
        if self.memory_total_mib is not None and self.memory_used_mib is not None:
            return self.memory_total_mib - self.memory_used_mib
        return None

    @property
    def cc_major(self) -> int | None:
        try:
            return int(str(self.compute_capability).split(".")[0])
        except (TypeError, ValueError):
            return None


@dataclass
class Copy:
    """Another installation of a distribution later on ``sys.path`` (import never reaches it):
    its version, the ``sys.path`` entry that holds it (the home folder written ``~``) and what that
    entry is (``PATH_KINDS``)."""

    version: str
    path: str
    path_kind: str


#: what a ``sys.path`` entry is: the user site (PEP 370), a PYTHONPATH entry, or the
#: environment's own (its site-packages, a .pth's folder, anything else)
PATH_KINDS = ("user site", "PYTHONPATH", "environment")


@dataclass
class Package:
    """An installed distribution: version and its ``Requires-Dist`` lines."""

    version: str
    requires: list[str] | None = None
    #: where it was installed from when not from a package index (PEP 610 ``direct_url.json``):
    #: ``git+https://github.com/owner/trl.git@<commit>``, ``file:///path/trl`` (a local tree)
    origin: str | None = None
    #: only where the distribution is installed more than once on ``sys.path``: the entry of the
    #: copy Python imports (the first) and its kind, and the other copies after it
    path: str | None = None
    path_kind: str | None = None
    other_copies: list[Copy] = field(default_factory=list)

    def shadowed(self) -> Copy | None:
        """The environment's own copy that the imported one hides: where the copy Python imports
        is the user site's or a PYTHONPATH entry's and a later copy in the environment's own
        ``sys.path`` entries is another version (None otherwise: one copy, copies that agree, the
        environment's first, or the others also a user site's or PYTHONPATH's, as a module
        system's PYTHONPATH entries are, where none is the environment's)."""
        if self.path_kind not in ("user site", "PYTHONPATH"):
            return None
        return next(
            (c for c in self.other_copies if c.path_kind == "environment" and c.version != self.version), None
        )


@dataclass
class Driver:
    version: str | None = None
    cuda: str | None = None


@dataclass
class Facts:
    """Everything collected from one machine (live) or loaded from a snapshot.

    ``nvml_error`` says why GPU facts are missing (no driver, no NVML, ...);
    ``source`` is ``"live"`` or the snapshot path, and decides which live-only checks run.
    """

    python: str = ""
    platform: str = ""
    driver: Driver = field(default_factory=Driver)
    packages: dict[str, Package] = field(default_factory=dict)
    gpus: list[Gpu] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    nvml_error: str | None = None
    hostname: str = ""
    source: str = "live"
    extra: dict[str, Any] = field(default_factory=dict)
    #: the training machine's GPUs are not known (a snapshot's ``"gpus": null``: the setup does
    #: not say how many, or which): no rule judges a GPU count, model or memory it was not given
    gpus_unknown: bool = False

    @property
    def live(self) -> bool:
        return self.source == "live"

    def version(self, name: str) -> str | None:
        """Installed version of a distribution (PEP 503 name), or None."""
        pkg = self.packages.get(normalize_name(name))
        return pkg.version if pkg else None

    def unknown(self, name: str) -> bool:
        """True when ``name`` is absent but that says nothing: versions were named with
        ``--assume`` (the training environment is elsewhere), so a package not named is
        unknown, not missing."""
        return bool(self.extra.get("assumed")) and normalize_name(name) not in self.packages

    def gpu(self, index: int) -> Gpu | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None


def normalize_name(name: str) -> str:
    """PEP 503 normalization: lowercase, runs of ``-_.`` become ``-`` (``re.sub(r"[-_.]+", "-",
    name).lower()``, with string methods: 5 times faster, and a check calls it thousands of times)."""
    value = name.replace("_", "-").replace(".", "-")
    while "--" in value:
        value = value.replace("--", "-")
    return value.lower()
