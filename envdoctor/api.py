"""``envdoctor.preflight``: the check as a library call, for the first lines of a training script.

Nothing here imports torch, transformers or trl: a ``GRPOConfig`` / ``TrainingArguments`` object is
read through its attributes.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor.errors import InputError
from envdoctor.facts.interface import Facts
from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area, Report

if TYPE_CHECKING:
    from envdoctor.checks.context import Context

#: Fields that decide the GRPO batch and generation layout: always read from a config object,
#: even when they hold the field's default (the rules must not guess them).
ALWAYS = (
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "generation_batch_size",
    "steps_per_generation",
    "use_vllm",
    "vllm_mode",
)
_SCALARS = (str, int, float, bool)


class PreflightError(Exception):
    """The preflight found errors (or warnings, with ``strict``); ``.report`` holds the report.

    Its message is the rendered text report unless a shorter one is given.
    """

    def __init__(self, report: Report, message: str | None = None) -> None:
        if message is None:
            from envdoctor.report import render

            message = render(report, "text")
        super().__init__(message)
        self.report = report


class PreflightInputError(PreflightError, InputError):
    """The input could not be read (a missing config file, a launch that is not a string):
    a ``PreflightError`` to catch with the others, and an ``InputError`` naming the input."""

    def __init__(self, exc: InputError) -> None:
        Exception.__init__(self, f"envdoctor: cannot check: {exc}")  # both bases' fields:
        self.report, self.source, self.problem = Report(areas=[]), exc.source, exc.problem


def _jsonable(value: Any, depth: int = 0) -> tuple[bool, Any]:
    """(keep, value): plain JSON data, enums as their values; anything else is dropped."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, _SCALARS):
        return True, value
    if depth < 3 and isinstance(value, (list, tuple)):
        items = [_jsonable(v, depth + 1) for v in value]
        return all(k for k, _ in items), [v for _, v in items]
    if depth < 3 and isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            keep, v = _jsonable(v, depth + 1)
            if not (keep and isinstance(k, str)):
                return False, None
            out[k] = v
        return True, out
    return False, None


def _defaults(obj: Any) -> dict[str, Any]:
    """The declared default of every dataclass field of ``obj`` (factories called; cheap ones)."""
    if not dataclasses.is_dataclass(obj):
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            try:
                out[f.name] = f.default_factory()
            except Exception:
                continue
    return out


def is_grpo_config(obj: Any) -> bool:
    """A GRPO config object (TRL's GRPOConfig or a subclass): it has ``num_generations``."""
    return hasattr(obj, "num_generations")


def config_mapping(obj: Any) -> dict[str, Any]:
    """The GRPO-relevant fields of a config object as plain data.

    Values equal to the field's default are left out (they are what the installed TRL does
    anyway, and deprecated fields keep their defaults) except the batch/generation ones in
    ``ALWAYS``; secret-looking fields, private attributes and non-JSON values are dropped.
    """
    from envdoctor.facts.environment import is_secret

    if isinstance(obj, Mapping):
        raw = dict(obj)
        defaults: dict[str, Any] = {}
    else:
        raw = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        if not raw and callable(getattr(obj, "to_dict", None)):
            raw = dict(obj.to_dict())
        defaults = _defaults(obj)
    out = {}
    for key, value in raw.items():
        if not isinstance(key, str) or key.startswith("_") or value is None or is_secret(key):
            continue
        keep, plain = _jsonable(value)
        if not keep:
            continue
        if key in defaults and key not in ALWAYS:
            _, default = _jsonable(defaults[key])
            if plain == default:
                continue
        out[key] = plain
    return out


def running_launch(env: Mapping[str, str] | None = None) -> str | None:
    """The launch of the job this process belongs to, from torchrun/accelerate's variables.

    A process with LOCAL_RANK set runs distributed, one GPU per process (accelerate's
    ``PartialState`` and so ``Trainer`` decide so even for one process); LOCAL_WORLD_SIZE,
    WORLD_SIZE and GROUP_RANK (the node) make it a ``torchrun`` line that resolves to every rank
    of this node.
    """
    env = os.environ if env is None else env
    try:
        int(env["LOCAL_RANK"])
        world = int(env.get("WORLD_SIZE") or 1)
        local = int(env.get("LOCAL_WORLD_SIZE") or world)
        node = int(env.get("GROUP_RANK") or env.get("NODE_RANK") or 0)
    except (KeyError, ValueError):
        return None
    if world < 1 or local < 1:
        return None
    nodes = max(world // local, 1)
    return f"torchrun --nproc_per_node {local} --nnodes {nodes} --node_rank {node} {_script()}"


def _script() -> str:
    """This program's script name for launch lines (``train.py`` when it has none)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return shlex.quote(name) if name.endswith(".py") else "train.py"


def this_process_launch(env: Mapping[str, str] | None = None) -> str:
    """How the calling process runs: a launcher's process, else one plain python process
    (which is what decides, e.g., whether ``Trainer`` falls into ``nn.DataParallel``)."""
    return running_launch(env) or f"python {_script()}"


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def job_pids(env: Mapping[str, str] | None = None) -> set[int]:
    """This process and, under a launcher (LOCAL_RANK set), its sibling ranks (the launcher's
    other children): the job's own processes, which rules must not count as "others"."""
    env = os.environ if env is None else env
    pids = {os.getpid()}
    parent = os.getppid()
    if "LOCAL_RANK" in env and parent > 1:
        try:
            entries = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            entries = []
        pids |= {p for p in entries if _ppid(p) == parent}
    return pids


def _facts(facts: Facts | str | os.PathLike | Mapping | None) -> Facts:
    if isinstance(facts, Facts):
        return facts
    if facts is None:
        from envdoctor.facts.collect import collect_facts

        live = collect_facts()
        own = job_pids()
        for gpu in live.gpus:  # the job's own CUDA contexts are not someone else's memory
            gpu.processes = [p for p in gpu.processes if p.pid not in own]
        live.extra["job_pids"] = sorted(own)
        return live
    from envdoctor.facts import snapshot

    if isinstance(facts, Mapping):
        return snapshot.from_dict(dict(facts), "facts given to preflight")
    return snapshot.load(str(facts))


def _plan(config: Any, launch: str | list[str] | None, facts: Facts):
    from envdoctor.plan.build import build_plan

    path = config_dict = None
    note = ""
    if isinstance(config, (str, os.PathLike)):
        path = str(Path(config))
    elif config is not None:
        if isinstance(config, Mapping) or is_grpo_config(config):
            config_dict = config_mapping(config)
        else:
            note = f"{type(config).__name__} is not a GRPO config: GRPO config rules not run"
    plan = build_plan(config=path, launch=launch, config_dict=config_dict, live=facts.live)
    if config_dict is not None and not isinstance(config, Mapping):
        origin = f"{type(config).__name__} object"
        plan.config_origin = {k: origin for k in plan.config_origin}
    return plan, note


def probe_area(ctx: Context, timeout_s: float = 180.0) -> Area:
    """The probe's report area, or an info finding when the probe cannot be imported here."""
    try:
        from envdoctor.probe.area import probe_area as run_area

        return run_area(ctx, timeout=timeout_s)
    except ImportError as exc:
        area = Area(key="probe", title="Probe", summary="unavailable")
        area.findings.append(
            Finding(
                "PRB012",
                Severity.INFO,
                f"probe not run: envdoctor.probe is unavailable ({exc})",
                fix="pip install 'grpo-envdoctor[probe]' (or run `envdoctor probe` where it is installed)",
            )
        )
        return area


def preflight_report(
    config: Any = None,
    launch: str | list[str] | None = None,
    probe: bool = False,
    facts: Facts | str | os.PathLike | Mapping | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    network: bool = True,
    probe_timeout: float = 180.0,
    allow_hosts: list[str] | tuple[str, ...] | None = None,
):
    """``(context, report)`` of a preflight, never raising on findings (see ``preflight``)."""
    from envdoctor.doctor import check
    from envdoctor.net_policy import allowed_hosts

    allow = allowed_hosts(allow_hosts, "preflight(allow_hosts=…)")

    snap = _facts(facts)
    if launch is None:
        launch = this_process_launch()
    plan, note = _plan(config, launch, snap)
    cpu = _cpu_switch(config)
    if cpu and not plan.config.get(cpu):  # a TrainingArguments object: not read as a GRPO config
        snap = dataclasses.replace(
            snap,
            extra={**snap.extra, "cuda_unused": f"CUDA is not used: {cpu} is on ({type(config).__name__})"},
        )
    if note:  # not a GRPO run: whether TRL is installed is no concern of it
        ignore = [*(ignore or []), "PKG008"]
    ctx, report = check(snap, plan, select=select, ignore=ignore, network=network, allow_hosts=allow)
    areas = {a.key: a for a in report.areas}
    if note:
        areas["config"].note = note
    if areas["layout"].note.startswith("no launch"):
        areas["layout"].note = "no launch line given (preflight(launch=...)) and none seen"
    if probe:
        if not snap.live:
            raise InputError(
                "probe=True", "the probe runs on this machine; it cannot check a snapshot (drop facts=)"
            )
        from envdoctor.doctor import with_probe

        with_probe(report, probe_area(ctx, timeout_s=probe_timeout))
    elif report.areas[-1].key == "probe":
        report.areas[-1].note = "not run (preflight(probe=True) runs it)"
    return ctx, report


def _cpu_switch(config: Any) -> str | None:
    """``use_cpu`` / ``no_cuda`` when the config object (or mapping) turns it on: the run trains
    on the CPU and the CUDA-only rules do not apply."""
    from envdoctor.checks.context import CPU_SWITCHES
    from envdoctor.plan.values import as_bool

    if config is None or isinstance(config, (str, os.PathLike)):
        return None
    get = config.get if isinstance(config, Mapping) else lambda k: getattr(config, k, None)
    return next((k for k in CPU_SWITCHES if as_bool(get(k)) is True), None)


def _require_strings(name: str, value: Any) -> None:
    ok = (
        value is None
        or (isinstance(value, str) and name == "launch")
        or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))
    )
    if not ok:
        want = "a string or a list of strings" if name == "launch" else "a list of strings"
        raise InputError(f"preflight({name}=…)", f"expected {want}, got {value!r:.80}")


def preflight(
    config: Any = None,
    launch: str | list[str] | None = None,
    probe: bool = False,
    strict: bool = False,
    facts: Facts | str | os.PathLike | Mapping | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    network: bool = True,
    probe_timeout: float = 180.0,
    allow_hosts: list[str] | tuple[str, ...] | None = None,
) -> Report:
    """Check this machine for the run ``config`` describes; raise ``PreflightError`` on errors.

    ``config``: a ``GRPOConfig`` / ``TrainingArguments`` object, a dict of GRPOConfig keys, or a
    YAML/JSON file path. ``launch``: the launch line(s), e.g. ``"accelerate launch
    --num_processes 3 train.py"`` (default: this process as it runs: a torchrun/accelerate rank
    read from the launcher's variables, else one plain python process). ``facts``: a snapshot
    (path, dict or ``Facts``) instead of this machine. ``probe``: also run the tiny real GRPO
    step. ``strict``: warnings raise too. ``network``: False contacts nothing; otherwise only
    loopback is contacted (a vLLM server's /health, a port), plus the hosts in ``allow_hosts``.
    Returns the ``Report`` when nothing blocks the run.
    """
    try:
        for name, value in (("launch", launch), ("select", select), ("ignore", ignore)):
            _require_strings(name, value)
        _, report = preflight_report(
            config=config,
            launch=launch,
            probe=probe,
            facts=facts,
            select=select,
            ignore=ignore,
            network=network,
            probe_timeout=probe_timeout,
            allow_hosts=allow_hosts,
        )
    except InputError as exc:  # bad input is a PreflightError too: one exception to catch
        raise PreflightInputError(exc) from None
    if report.exit_code(strict=strict):
        raise PreflightError(report)
    return report
