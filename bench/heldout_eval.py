"""Run envdoctor on the held-out set of docs/validation/heldout-2026-11-28/ (real logs, published
setups, repositories' notes; collected by a session that did not write the code it judges).

    python bench/heldout_eval.py logs OUT.json      # triage --format json on every log
    python bench/heldout_eval.py setups OUT.json    # hook + check + fix on every setup
    python bench/heldout_eval.py repos REPOS OUT.json  # the hook on fetched repositories (REPOS:
        a folder of owner__name checkouts at the commits the notes name; not shipped here)

Each writes the findings per case; docs/validation/heldout-2026-11-28.md reads them against the
labels (index.jsonl, label.json, the repositories' notes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: the set to run: the committed one, or another of the same layout (HELDOUT_DATA=FOLDER)
DATA = Path(os.environ.get("HELDOUT_DATA") or ROOT / "docs" / "validation" / "heldout-2026-11-28")
sys.path.insert(0, str(ROOT))
try:  # the tree measured (ROOT): a `$(…)` stays one word of a trainer line
    from envdoctor.plan.shell_words import split as split_words
except ImportError:  # a tree from before it (a base measured with this harness)
    from shlex import split as split_words

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA", "PYTORCH"))}
ENV.update(PYTHONPATH=str(ROOT), NO_COLOR="1")

# The stack a user of each TRL line installed (vLLM's torch pin from vLLM's own metadata), fixed
# before the merged code was run: the setups give TRL's release but seldom the rest.
TABLE = {
    "0.14": {"torch": "2.5.1", "transformers": "4.48.3", "vllm": "0.7.2", "accelerate": "1.3.0"},
    "0.15": {"torch": "2.5.1", "transformers": "4.49.0", "vllm": "0.7.2", "accelerate": "1.4.0"},
    "0.16": {"torch": "2.5.1", "transformers": "4.50.0", "vllm": "0.7.3", "accelerate": "1.5.2"},
    "0.17": {"torch": "2.6.0", "transformers": "4.51.3", "vllm": "0.8.5.post1", "accelerate": "1.6.0"},
    "0.18": {"torch": "2.6.0", "transformers": "4.52.3", "vllm": "0.8.5.post1", "accelerate": "1.7.0"},
    "0.19": {"torch": "2.6.0", "transformers": "4.52.4", "vllm": "0.8.5.post1", "accelerate": "1.8.1"},
    "0.22": {"torch": "2.7.1", "transformers": "4.55.0", "vllm": "0.10.0", "accelerate": "1.10.0"},
    "0.23": {"torch": "2.8.0", "transformers": "4.56.1", "vllm": "0.10.2", "accelerate": "1.10.1"},
    "1.0": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.17.1", "accelerate": "1.12.0"},
    # added for the second set (2026-11-28, before its results were judged): vLLM at the top of
    # the TRL line's supported range (rules/knowledge/trl.yaml), torch and transformers from that
    # vLLM's pins (rules/knowledge/vllm.yaml)
    "0.20": {"torch": "2.7.0", "transformers": "4.53.2", "vllm": "0.9.2", "accelerate": "1.9.0"},
    "0.21": {"torch": "2.7.1", "transformers": "4.55.2", "vllm": "0.10.1.1", "accelerate": "1.10.0"},
    "0.24": {"torch": "2.8.0", "transformers": "4.57.1", "vllm": "0.10.2", "accelerate": "1.11.0"},
    "0.25": {"torch": "2.8.0", "transformers": "4.57.1", "vllm": "0.10.2", "accelerate": "1.11.0"},
    "0.26": {"torch": "2.9.0", "transformers": "4.57.3", "vllm": "0.11.2", "accelerate": "1.11.0"},
    "0.29": {"torch": "2.9.0", "transformers": "4.57.3", "vllm": "0.12.0", "accelerate": "1.12.0"},
    "1.1": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.17.1", "accelerate": "1.12.0"},
    "1.2": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.18.0", "accelerate": "1.12.0"},
    "1.5": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.18.0", "accelerate": "1.12.0"},
    # added for the third set (2026-11-28, second session), from bench/trl_examples_sweep.py's
    # rows (written before the set was seen): the lines it named but this table lacked, which
    # fell back to the 0.15 line's stack (transformers 4.49, vLLM 0.7.2) for TRL 0.28 and 1.x
    "0.27": {"torch": "2.9.0", "transformers": "4.57.3", "vllm": "0.12.0", "accelerate": "1.12.0"},
    "0.28": {"torch": "2.9.0", "transformers": "4.57.3", "vllm": "0.12.0", "accelerate": "1.12.0"},
    "1.3": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.18.0", "accelerate": "1.12.0"},
    "1.4": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.18.0", "accelerate": "1.12.0"},
    "1.6": {"torch": "2.10.0", "transformers": "4.57.1", "vllm": "0.19.0", "accelerate": "1.12.0"},
    "1.7": {"torch": "2.11.0", "transformers": "4.57.1", "vllm": "0.23.0", "accelerate": "1.12.0"},
    "1.8": {"torch": "2.11.0", "transformers": "4.57.1", "vllm": "0.23.0", "accelerate": "1.12.0"},
    "1.9": {"torch": "2.11.0", "transformers": "4.57.1", "vllm": "0.23.0", "accelerate": "1.12.0"},
}


def _line(version: str) -> dict[str, str]:
    """The stack of TRL ``version``'s line, else of the nearest line below it that the table has
    (never the 0.15 line's stack for a newer TRL)."""

    def key(line: str) -> tuple[int, ...]:
        return tuple(int(x) for x in line.split("."))

    want = key(".".join(version.split(".")[:2]))
    below = [line for line in TABLE if key(line) <= want]
    return TABLE[max(below, key=key)] if below else TABLE["0.15"]


LEAD = re.compile(r"^(\d+\.\d+(?:\.\w+)*(?:\+rocm[\w.]*)?)")  # a ROCm build keeps its label (2.10.0+rocm7.1)
RANGE = re.compile(r"^([<>=!~][^ (]*)")
LABELS = ("label.json", "stack.json", "gpus.json")  # a setup's own files, not the run's
HOOK_FILES = re.compile(
    r"(\.ya?ml|\.json)$|^requirements.*\.txt$|^(pyproject\.toml|uv\.lock|Dockerfile|setup\.py|setup\.cfg)$"
)


#: the `files` pattern of envdoctor's pre-commit hook (.pre-commit-hooks.yaml, id envdoctor)
HOOK_PATTERN = re.compile(
    next(
        h["files"]
        for h in yaml.safe_load((Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml").read_text())
        if h["id"] == "envdoctor"
    )
)
#: files the harness writes into a setup's folder: its snapshot, not the repository's
OWN_FILES = frozenset({"facts.json", "facts_after.json"})


def envdoctor(args: list[str], cwd: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        return {"rc": proc.returncode, "data": json.loads(proc.stdout)}
    except ValueError:
        return {"rc": proc.returncode, "raw": (proc.stdout + proc.stderr)[-800:]}


def findings(report: dict) -> list[dict]:
    return [
        {"rule": f["rule"], "severity": f["severity"], "message": f["message"][:300]}
        for f in report.get("findings", [])
    ]


def _said(report: dict) -> list[str]:
    return sorted(
        f"{f['rule']}:{f['severity']}" for f in report.get("findings", []) if f["severity"] != "info"
    )


def logs(out: Path) -> None:
    res = {}
    for line in (DATA / "logs" / "index.jsonl").read_text().splitlines():
        e = json.loads(line)
        got = envdoctor(["triage", "--format", "json", str(DATA / "logs" / e["file"])], Path("/tmp"))
        res[e["file"]] = {"rc": got["rc"], "findings": findings(got.get("data") or {})}
    out.write_text(json.dumps(res, indent=1))


#: a launch line that runs another program of the setup than its trainer: an evaluation, a
#: dashboard, a sweep driver, a report, a cloud launcher (set 22's judge: the last line was
#: dashboard/server.py, an eval script, sweep.py, `sky launch`)
NOT_TRAINING = re.compile(
    r"(?i)\bsky\s+launch\b|\bdashboard\b"
    r"|[\w/.-]*(?:eval|evaluate|sweep|report|plot)\w*\.(?:py|sh)\b"
    r"|-m\s+[\w.]*(?:eval|evaluate|report|plot)\w*"
)
#: a line that starts a vLLM server (not a trainer's flag naming one: --vllm_server_port)
STARTS_SERVER = re.compile(r"\btrl\s+vllm-serve\b|\bvllm\s+serve\b|\bvllm_serve\.py\b|\bvllm\.entrypoints\b")
#: a line that runs no program of the run: a shell builtin alone, an environment or install step
NOISE = re.compile(
    r"^\s*(?:(?:wait|cd|export|source|\.|echo|set|unset|mkdir|sleep|trap|exit|conda\s+activate|"
    r"git\s+(?:clone|checkout|pull)|huggingface-cli\s+login|hf\s+auth|wandb\s+login)\b(?!.*(?:&&|;))"
    r"|(?:uv\s+(?:sync|venv|lock|add)|conda\s+(?:create|install)|python[\d.]*\s+-m\s+(?:venv|pip)|"
    r"apt(?:-get)?\s|(?:bash|sh)\s+(?:\S*/)?(?:setup|install)\w*\.sh)\b)"
)


def _trainer_line(launch: list[str]) -> str:
    """The trainer's line among the setup's commands: the last line that runs a program and is
    not another program of the setup (an evaluation, a dashboard, a sweep driver, a cloud
    launcher: NOT_TRAINING; a vLLM server: STARTS_SERVER); else the last line. Collectors write the
    trainer's line last; set 22's judge found it after it (dashboard/server.py, an eval script,
    sweep.py, `sky launch`)."""
    runs = [
        x for x in launch if not NOISE.match(x) and not NOT_TRAINING.search(x) and not STARTS_SERVER.search(x)
    ]
    return runs[-1] if runs else launch[-1] if launch else ""


def _commands(setup: Path) -> list[str]:
    """The setup's commands: continuation lines joined, comments, pip installs and the
    collector's elisions ("...") dropped."""
    done, cur = [], ""
    for raw in (setup / "launch.txt").read_text().splitlines():
        line = raw.split("  #")[0].split(" # ")[0].rstrip()
        if line.strip().startswith("#"):
            continue
        # a notebook's cells: `!cmd` runs a shell command, `%cd DIR` changes the folder, other
        # magics (`%pip install …`, `%env`) are the notebook's, not a launch
        stripped = line.strip()
        if stripped.startswith("%"):
            if not stripped.startswith("%cd "):
                continue
            line = stripped[1:]
        elif stripped.startswith("!"):
            line = stripped[1:]
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith(("pip ", "uv pip")):
            # the collector's "..." / "…" for flags the source elides: no word of the command
            words = [w for w in cur.split() if w not in ("...", "…")]
            done.append(" ".join(words).replace("<N-1>", "1"))
        cur = ""
    return done


#: a stack note's entries that are no package pip installs
NOT_PACKAGES = frozenset({"python", "platform", "driver", "note", "cuda", "os", "gpu", "hardware"})
#: a launch line's CUDA_VISIBLE_DEVICES (set on the line or exported), its list of indices
VISIBLE = re.compile(r"\bCUDA_VISIBLE_DEVICES=[\"']?([\d,\s]+)")


#: the GPU models setups name (gpus.json "model" / "name"), with NVML's name, memory and compute
#: capability (NVIDIA's CUDA GPUs table, https://developer.nvidia.com/cuda-gpus); first match wins
_GPU_MODELS = (
    ("H200", "NVIDIA H200", 143771, "9.0"),
    ("H100", "NVIDIA H100 80GB HBM3", 81559, "9.0"),
    ("H800", "NVIDIA H800", 81559, "9.0"),
    ("A100", "NVIDIA A100-SXM4-80GB", 81920, "8.0"),
    ("A800", "NVIDIA A800-SXM4-80GB", 81920, "8.0"),
    ("L40S", "NVIDIA L40S", 46068, "8.9"),
    ("L40", "NVIDIA L40", 46068, "8.9"),
    ("A6000", "NVIDIA RTX A6000", 49140, "8.6"),
    ("A40", "NVIDIA A40", 46068, "8.6"),
    ("A10G", "NVIDIA A10G", 23028, "8.6"),
    ("A10", "NVIDIA A10", 23028, "8.6"),
    ("L4", "NVIDIA L4", 23034, "8.9"),
    ("A4000", "NVIDIA RTX A4000", 16376, "8.6"),
    ("5090", "NVIDIA GeForce RTX 5090", 32607, "12.0"),
    ("4090", "NVIDIA GeForce RTX 4090", 24564, "8.9"),
    ("3090", "NVIDIA GeForce RTX 3090", 24576, "8.6"),
    ("V100", "Tesla V100-SXM2-32GB", 32768, "7.0"),
    ("T4", "Tesla T4", 15360, "7.5"),
)


def _gpu_model(gpus: dict, default: dict) -> dict:
    """The GPU of the setup's machine as NVML would name it: the model gpus.json names (its memory
    where it gives one), else ``default`` (an H100, as before gpus.json was read)."""
    said = f"{gpus.get('model') or ''} {gpus.get('name') or ''}".upper()
    for key, name, mib, cc in _GPU_MODELS:
        if re.search(rf"(?<![A-Z0-9]){key}(?![0-9])", said):
            gib = gpus.get("memory_gib")
            if isinstance(gib, (int, float)) and 4 <= gib <= 200:
                mib = int(gib * 1024)
            return {"name": name, "memory_total_mib": mib, "compute_capability": cc}
    return default


#: what envdoctor's facts say on a machine without NVIDIA's driver (facts/gpus.py)
NO_NVML = "NVML library libnvidia-ml.so.1 not found: no NVIDIA driver installed on this machine"


def _not_nvidia(gpus: dict) -> bool:
    """gpus.json names an AMD GPU (``AMD Instinct MI300X``, a Radeon): NVML sees none of it."""
    said = f"{gpus.get('model') or ''} {gpus.get('name') or ''}"
    return bool(re.search(r"\bAMD\b|Instinct|Radeon|\bMI[23]\d\d", said)) and "NVIDIA" not in said.upper()


#: a launch line that starts a vLLM server (TRL's or vLLM's own)
SERVER_WORDS = ("vllm-serve", "vllm serve", "vllm_serve", "vllm.entrypoints")


def _gpu_count(gpus: dict, launch: list[str]) -> int | None:
    """The GPUs of the setup's machine: gpus.json's count, and at least one more than the highest
    index a launch line's CUDA_VISIBLE_DEVICES names (``=1,2``: the machine has GPUs 0-2, whatever
    the collector counted as used); None when gpus.json gives no number and no line names an
    index (the count is not known: the snapshot says so, ``"gpus": null``, and no rule judges a
    GPU count the setup never stated)."""
    raw = gpus.get("count")
    count = (
        raw if isinstance(raw, int) and raw > 0 else int(raw) if str(raw).isdigit() and int(raw) > 0 else None
    )
    named = [int(i) for x in launch for m in VISIBLE.finditer(x) for i in re.findall(r"\d+", m.group(1))]
    if count is None and not named:
        return None
    return max(min(count or 0, 8), max(named, default=-1) + 1)


#: a version range inside a stack note ("pyproject.toml >=4.45.0,<5", "(…, >=0.19)")
NOTE_RANGE = re.compile(r"(?:[<>]=?|==|~=|!=)\s*\d+(?:\.\d+)*(?:\s*,\s*(?:[<>]=?|==|~=|!=)\s*\d+(?:\.\d+)*)*")


def _note_range(name: str, note: str) -> str | None:
    """The version range a stack note gives for package ``name`` ("pyproject.toml >=4.45.0,<5",
    "(…, >=0.19)", "'trl>=0.7.0'"), not one of another package it names ("pulled by
    verifiers[all]==0.1.3") nor an exact pin alone; None when it gives none."""
    for m in NOTE_RANGE.finditer(note):
        before = re.search(r"([\w.\[\]-]*)$", note[: m.start()]).group(1)  # type: ignore[union-attr]
        if before and before.lower().replace("_", "-") != name.lower().replace("_", "-"):
            continue  # a range of another package
        spec = re.sub(r"\s+", "", m.group(0))
        if spec.startswith("==") and "," not in spec:
            continue  # an exact pin: the note's version, not a range
        if versions_spec_ok(spec):
            return spec
    return None


def _pip_pick(
    name: str, spec: str, others: dict[str, str], uses_vllm: bool, prefer: str | None = None
) -> str | None:
    """The release of ``name`` pip installs for ``spec`` beside ``others`` (name -> version):
    ``prefer`` (what the rest of the stack brought: the release TRL's line installed, TABLE)
    when the range allows it, as pip keeps an installed release the range allows; else the
    release the range allows nearest to it (release series apart, newest patch first), or with
    no ``prefer`` the newest; each only when consistent with the others by envdoctor's own
    resolver (``checks.resolver.Stack``: each package's requirements, vLLM's torch and
    transformers pins, TRL's vLLM range per release; the known failures aside, which pip does
    not know); None when none is."""
    from envdoctor import versions
    from envdoctor.checks.context import Context
    from envdoctor.checks.resolver import Stack
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.knowledge import knowledge
    from envdoctor.plan.build import build_plan
    from tests.conftest import snapshot

    facts = from_dict(snapshot(1, packages=dict(others)), "harness")
    plan = build_plan(config_dict={"use_vllm": True} if uses_vllm else {}, live=False)
    stack = Stack(Context(facts=facts, plan=plan), require={name: spec})
    kb = knowledge()
    known = set(stack.known(name)) | {row[name] for row in TABLE.values() if name in row}
    if name == "trl":
        known |= set(TRL_RELEASES) | {str(t) for t in kb.grpo_keys.get("tags_scanned") or []}
    if name == "transformers":
        scanned = (kb.parser_keys.get("training_arguments") or {}).get("releases_scanned") or []
        known |= {str(t) for t in scanned}
    order = sorted(known, key=versions.sort_key, reverse=True)
    if prefer:  # pip keeps what the rest of the stack brought while the range allows it, else
        # the nearest release series to it, newest patch first (the resolver's nearest order)
        from envdoctor.checks.resolver import _series

        series = sorted({_series(v) for v in [*known, prefer]})
        here = series.index(_series(prefer))
        order = [prefer] + sorted(order, key=lambda v: abs(series.index(_series(v)) - here))
    for v in order:
        if versions.satisfies(v, spec) is not True or not stack.allowed(name, v, failures=False):
            continue
        if not [n for n in stack.broken({**others, name: v}, failures=False) if n.name in {name, *others}]:
            return v
    return None


def versions_spec_ok(spec: str) -> bool:
    from envdoctor import versions

    return versions.spec(spec) is not None


def _consistent(exact: dict[str, str], given: set[str], ranges: dict[str, str], uses_vllm: bool) -> None:
    """The packages the setup does not name, filled from TABLE, made consistent with those it
    does (pip would install them so): a vLLM release inside the setup's range that allows its
    transformers and torch (vLLM's own pins, rules/knowledge/vllm.yaml), inside TRL's supported
    range where one is; then the torch that vLLM is built for and a transformers it allows. A vLLM
    nothing given allows is left out when the setup does not use vLLM (a course chapter pinning
    transformers 4.47.1 installs none)."""
    from envdoctor import versions
    from envdoctor.knowledge import knowledge

    kb = knowledge()
    pins = [p for p in kb.vllm.get("torch_pins") or [] if p.get("vllm") and p.get("torch")]

    def allows(p: dict) -> bool:
        want = str(p.get("transformers") or "")
        if "transformers" in given and want and versions.satisfies(exact["transformers"], want) is False:
            return False
        base = versions.parse(exact.get("torch"))
        if "torch" in given and base is not None and base.public != str(p["torch"]):
            return False
        if "torch" in ranges and versions.satisfies(str(p["torch"]), ranges["torch"]) is False:
            return False
        return not ("vllm" in ranges and versions.satisfies(str(p["vllm"]), ranges["vllm"]) is False)

    if "vllm" not in given:
        fits = [str(p["vllm"]) for p in pins if allows(p)]
        line = (kb.trl_line(exact["trl"]) or {}).get("vllm")
        supported = [v for v in fits if not line or versions.satisfies(v, str(line)) is not False]
        if exact.get("vllm") in fits:
            pass  # the TRL line's own vLLM fits what is given
        elif supported or fits:
            exact["vllm"] = (supported or fits)[0]
        elif not uses_vllm:
            exact.pop("vllm", None)
    pin = next((p for p in pins if str(p["vllm"]) == exact.get("vllm")), None)
    if pin is None:
        return
    if (
        "torch" not in given
        and versions.satisfies(str(pin["torch"]), ranges.get("torch", ">=0")) is not False
    ):
        exact["torch"] = str(pin["torch"])
    want = str(pin.get("transformers") or "")
    if "transformers" not in given and want and versions.satisfies(exact["transformers"], want) is False:
        known = sorted({row["transformers"] for row in TABLE.values()}, key=versions.sort_key)
        ok = [
            t
            for t in known
            if versions.satisfies(t, want) and versions.satisfies(t, ranges.get("transformers", ">=0"))
        ]
        if ok:
            exact["transformers"] = ok[0]


def _uses_vllm(setup: Path) -> bool:
    """Whether the setup generates with vLLM (its config, a server line, its script)."""
    text = " ".join(
        (setup / f).read_text(errors="replace")
        for f in ("config.yaml", "launch.txt", "train.py")
        if (setup / f).is_file()
    )
    return bool(
        re.search(
            r"(?m)^\s*use_vllm:\s*true|vllm[-_ ]serve|use_vllm\s*=\s*True|fast_inference\s*=\s*True", text
        )
    )


#: TRL's releases and the day each was first uploaded (PyPI's JSON API, read 2026-11-28): a setup
#: that names TRL only by a range or a date ("unpinned, pulled by unsloth, Sept 2025") installed
#: the newest release the range allows at that date, as pip would have
TRL_RELEASES = {
    "0.14.0": "2025-01-29",
    "0.15.0": "2025-02-13",
    "0.15.1": "2025-02-18",
    "0.15.2": "2025-02-25",
    "0.16.0": "2025-03-22",
    "0.16.1": "2025-04-04",
    "0.17.0": "2025-04-24",
    "0.18.0": "2025-05-28",
    "0.18.1": "2025-05-29",
    "0.18.2": "2025-06-15",
    "0.19.0": "2025-06-20",
    "0.19.1": "2025-07-08",
    "0.20.0": "2025-07-29",
    "0.21.0": "2025-08-05",
    "0.22.0": "2025-08-29",
    "0.22.1": "2025-08-29",
    "0.22.2": "2025-09-03",
    "0.23.0": "2025-09-10",
    "0.23.1": "2025-10-02",
    "0.24.0": "2025-10-16",
    "0.25.0": "2025-11-05",
    "0.25.1": "2025-11-12",
    "0.26.0": "2025-12-09",
    "0.26.1": "2025-12-12",
    "0.26.2": "2025-12-18",
    "0.27.0": "2026-01-16",
    "0.27.1": "2026-01-24",
    "0.27.2": "2026-02-03",
    "0.28.0": "2026-02-10",
    "0.29.0": "2026-02-25",
    "0.29.1": "2026-03-20",
    "1.0.0": "2026-03-30",
    "1.1.0": "2026-04-12",
    "1.2.0": "2026-04-17",
    "1.3.0": "2026-04-26",
    "1.4.0": "2026-05-08",
    "1.5.0": "2026-05-25",
    "1.5.1": "2026-05-27",
    "1.6.0": "2026-06-11",
    "1.7.0": "2026-06-25",
    "1.7.1": "2026-07-04",
    "1.8.0": "2026-07-09",
    "1.9.0": "2026-07-21",
    "1.9.1": "2026-07-26",
    "1.9.2": "2026-07-28",
    "1.10.0": "2026-08-13",
    "1.11.0": "2026-08-26",
    "1.12.0": "2026-08-26",
    "1.13.0": "2026-09-10",
    "1.14.0": "2026-09-25",
    "1.14.1": "2026-09-29",
    "1.14.2": "2026-10-06",
    "1.15.0": "2026-10-08",
    "1.16.0": "2026-10-15",
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def _trl_from_note(note: str, context: str = "") -> str | None:
    """TRL's release from a stack note that gives no leading version: a version it names as the
    one installed ("0.21.0 then current", "0.29.x current on …", "~0.17.0.dev0", "(0.21.0.dev0;"),
    else the newest release a range and a date allow ("">=0.21,<0.22"", "Sept 2025"); None when
    the note gives neither. A month is narrowed by a day of that month the rest of the stack
    gives (``context``: "unsloth": "latest at 2025-09-04")."""
    from envdoctor import versions

    named = (
        re.search(r"(\d+\.\d+\.(?:\d+|x)(?:\.dev\d+)?)(?:\.x)? (?:then )?current", note)
        or re.search(r"~?(\d+\.\d+\.\d+\.dev\d+)", note)
        # a line the note infers ("built ~Aug 2025: inferred 0.20.x"): that line's newest release
        # at the note's date (not one of alternatives: "~0.15.x/0.16.0")
        or re.search(r"(?<![/\w.])(\d+\.\d+\.x)\b(?!/)", note)
    )
    # a fork's branch named by its date ("fork groundlight/trl branch release_2025_03_06"): the
    # fork is TRL's main branch of that day, which installs as the dev build of the release after
    # the newest one out then (main's version between releases), whatever month it was used in
    fork_day = re.search(r"(20\d\d)_(\d\d)_(\d\d)", note) if re.search(r"\bfork\b", note) else None
    # likewise TRL's main branch installed on a day ("git main at ~2025-03-04", "trl.git@main")
    if fork_day is None and re.search(r"\bgit main\b|\.git@main\b", note):
        fork_day = re.search(r"(20\d\d)-(\d\d)-(\d\d)", note)
    if fork_day and not named:
        base = "-".join(fork_day.groups())
        out = [v for v, up in TRL_RELEASES.items() if up <= base]
        if out:
            major, minor = versions.parse(max(out, key=versions.sort_key)).release[:2]  # type: ignore[union-attr]
            return f"{major}.{minor + 1}.0.dev0"
    # a range the note quotes ("unpinned 'trl>=0.15.0' (resolved at job time, 2026-03-08)"): the
    # newest release it allows at the note's date, as pip installed it then
    quoted = re.search(r"(>=\s*\d+(?:\.\d+)*(?:,\s*<\s*\d+(?:\.\d+)*)?)", note)
    rng = RANGE.match(note.strip()) or quoted
    day = re.search(r"(20\d\d)-(\d\d)-(\d\d)", note)
    month = re.search(r"\b([A-Za-z]{3})[a-z]*\.?[ -](20\d\d)\b", note)  # "Sept 2025", "Sept-2025"
    until = None
    if day:
        until = day.group(0)
    elif month and month.group(1).lower() in _MONTHS:
        m = _MONTHS.index(month.group(1).lower()) + 1
        days = re.findall(rf"{month.group(2)}-{m:02d}-\d\d", context)
        until = min(days) if days else f"{month.group(2)}-{m:02d}-31"
    if named and not named.group(1).endswith(".x"):
        return named.group(1)
    line = named.group(1)[: -len(".x")] if named else None
    # lines the note infers as a span ("inferred 0.20-0.21 (Aug 2025; …)"): a release of one of
    # them, the newest at the note's date (not Aug 2025's newest, 0.22.1)
    span = None if named else re.search(r"(?<![\w.])(\d+\.\d+)\s*[-–]\s*(\d+\.\d+)(?![\w.])", note)

    def in_span(v: str) -> bool:
        if span is None:
            return True
        key = versions.sort_key
        low, high = span.group(1), span.group(2)
        head = ".".join(v.split(".")[:2])
        return key(low) <= key(head) <= key(high)

    spec = rng.group(1) if rng and versions_spec_ok(rng.group(1)) else None
    allowed = [
        v
        for v, up in TRL_RELEASES.items()
        if (until is None or up <= until)
        and (spec is None or versions.satisfies(v, spec))
        and (line is None or v.startswith(line + "."))
    ]
    fits = [v for v in allowed if in_span(v)]
    if span is not None and not fits:
        # no TRL release in it (or out by the note's date): another package's span ("python
        # 3.10-3.12", "vllm 0.7-0.8"), no word of TRL's; the date and range decide as before
        span, fits = None, allowed
    if not fits or (spec is None and until is None and line is None and span is None):
        return None
    return max(fits, key=versions.sort_key)


def _not_installed(v: object) -> bool:
    """The stack's note says the package is not on the training machine: "not installed (…)",
    "not in the uv env (…)", "not used" (a verl / ROLL run: no TRL), "not in requirements.txt (and
    not installed by the notebook)", or another environment's ("==0.23.0 (… in a separate venv;
    not used by the reported GRPO runs)", "0.15 (separate ~/.venv, inference only)")."""
    return isinstance(v, str) and bool(
        re.match(r"(?i)\s*not (?:installed|used|in the [\w.-]+ env)\s*(?:$|[(,;:.–-])", v)
        or re.match(r"(?i)\s*not in requirements\S*\s*\((?:and )?not installed\b", v)
        or re.search(r"(?i)\bseparate \S{0,20}?(?:venv|env|environment)\b", v)
    )


#: a stack note's words for the version the run itself had
RAN = re.compile(
    r"(?i)\bruns?(?:\s+[\w-]+){0,5}:\s*v?(\d+\.\d+(?:\.\d+)?)"
    r"|\b(\d+\.\d+(?:\.\d+)?)(?:\+\w+)?\s+in\s+the\s+(?:run|logs?)\b"
    r"|->\s*(\d+\.\d+(?:\.\d+)?)\s+resolved\b"
)


def _run_version(v: str) -> str | None:
    """The version a stack note says the run had (RAN), as X.Y.Z; None where it says none."""
    m = RAN.search(v)
    if not m:
        return None
    got = next(g for g in m.groups() if g)
    return got if got.count(".") == 2 else f"{got}.0"


def _stack(stack: dict, uses_vllm: bool = True) -> dict[str, str]:
    exact = {}
    undated: dict[str, str] = {}  # name -> a range the stack note gives, with no install day
    for name, v in stack.items():
        # the version the note says the run had ("requirements.txt: trl==1.5.1; the recorded run:
        # 1.6.0", "5.3.0 pinned; 5.8.0 in the run", ">=0.9.0 (unpinned) -> 0.29.1 resolved"):
        # that one, over a pin or a range the same note gives
        ran = _run_version(v) if isinstance(v, str) and name not in NOT_PACKAGES else None
        # a pin written as a requirement ("trl[vllm]==0.18.0"), or the version a lock file holds
        # ("* (pyproject) / 0.11.4 (poetry.lock)"): that one (set 23's judge: read as no version)
        pin = (
            re.match(r"\s*[A-Za-z][\w.-]*(?:\[[^\]]*\])?\s*==\s*(\d+\.\d+(?:\.\d+)?)\b(?![.\w])", v)
            or re.search(r"\b(\d+\.\d+\.\d+)\s*\([\w.-]*\.lock\b", v)
            if isinstance(v, str) and name not in NOT_PACKAGES
            else None
        )
        if pin and not ran:
            ran = pin.group(1) if pin.group(1).count(".") == 2 else f"{pin.group(1)}.0"
        if ran:
            exact[name] = ran
            continue
        # installed at a version the setup never states ("not declared (GRPOConfig(use_vllm=True)
        # but requirements.txt lists no vllm)"): unknown, not one the harness picks (set 22's
        # gsm8k drew PKG002 / PKG006 on a vLLM the harness chose)
        if (
            isinstance(v, str)
            and re.match(r"(?i)\s*(?:not declared|not stated|unknown)\b", v)
            and not re.search(r"\d+\.\d+", v)  # a note that names a version reads on (TRL's inferences)
        ):
            exact[name] = "0+unknown"
            continue
        # a git commit pin, as a thread or setup.py names it: the dev release it installs as
        # ("git <sha> (between 0.16.1 and 0.17.0)" -> 0.17.0.dev0, "(0.18.0.dev, ...)" -> 0.18.0.dev0)
        git = (
            re.match(r"git [0-9a-f]{7,40} \((?:between \S+ and )?(\d+\.\d+\.\d+)", v)
            if isinstance(v, str)
            else None
        )
        if git:
            exact[name] = f"{git.group(1)}.dev0"
            continue
        # a pip git URL of TRL (``git+https://github.com/huggingface/trl.git@SHA``): placed on
        # TRL's main branch by envdoctor's own table of its commits (rules/knowledge/trl_commits.txt)
        url = re.search(r"huggingface/trl(?:\.git)?@([0-9a-f]{7,40})", v) if isinstance(v, str) else None
        if url and name == "trl":
            from envdoctor.knowledge.trl_commits import place

            placed = place(url.group(1)).version
            if placed:
                exact[name] = placed
                continue
        # the version the note says the range resolved to ("'transformers>=4.48' (range;
        # resolved 5.12.1 per the fix commit)"): that one
        said = (
            re.search(
                r"\bresolved (?:to )?(\d+\.\d+(?:\.\d+)?)\b|\binferred (\d+\.\d+\.\d+)\b(?!-)"
                # "names the resolved version: 'trl 1.6'" (a fix commit's words): that release
                rf"|\bresolved version:?\s*['\"]?{re.escape(name)}\s*=?=?\s*(\d+\.\d+(?:\.\d+)?)\b"
                # "(1.0.0 installed)", "TRL 1.0.0 installed on the pod": the release the run had
                rf"|(?:^|\(|;\s|{re.escape(name)}\s)(\d+\.\d+\.\d+) installed\b",
                v,
                re.IGNORECASE,
            )
            if isinstance(v, str)
            else None
        )  # ... or the exact version it infers ("consistent with unsloth's trl cap (inferred 0.24.0)")
        if said and name not in NOT_PACKAGES:
            got = said.group(1) or said.group(2) or said.group(3) or said.group(4)
            exact[name] = got if got.count(".") == 2 else f"{got}.0"  # "1.6": the line's first release
            continue
        m = LEAD.match(v.strip()) if isinstance(v, str) else None
        if m and not v.strip().startswith(("<", ">", "=", "~", "!")):
            # "0.16.x" (a thread names the line only): the line's first release
            exact[name] = re.sub(r"\.x$", ".0", m.group(1))
        # a range the note gives ("unpinned in olmocr (…, >=0.19)", "pyproject.toml >=4.45.0,<5")
        # with no install day: pip installs the newest release it allows (_pip_pick, below) ...
        note = isinstance(v, str) and name not in exact and not RANGE.match(v.strip())
        # ... unless TRL's note says when the stack was installed ("unpinned 'trl>=0.15.0'
        # (resolved at job time, 2026-03-08)"): pip installed the newest releases the bounds
        # allowed that day (TRL's from _trl_from_note, the rest from TRL's line in TABLE)
        dated = re.search(r"20\d\d-\d\d-\d\d", str(stack.get("trl") or "")) or (
            name == "trl"
            and re.search(r"\b[A-Z][a-z]{2,8}\.?[ -]20\d\d\b", str(v))  # a month: _trl_from_note
        )
        # ... or names the line it infers the install resolved to ("'trl>=0.8.0' (README); March
        # 2026 install -> TRL 0.29.x, inferred"): that line, from _trl_from_note
        inferred = isinstance(v, str) and re.search(r"\d+\.\d+\.x\b[^;]{0,40}\binferred\b", v)
        found = _note_range(name, v) if note and not dated and not inferred else None
        if found and name not in NOT_PACKAGES:
            undated[name] = found
    if "trl" not in exact and "trl" in undated:
        placed = _pip_pick("trl", undated["trl"], exact, uses_vllm)
        if placed:
            exact["trl"] = placed
    if "trl" not in exact and isinstance(stack.get("trl"), str):
        placed = _trl_from_note(stack["trl"], " ".join(str(v) for v in stack.values()))
        if placed:
            exact["trl"] = placed
    if "trl" not in exact:
        # TRL named by no version, range or day ("unpinned (not printed; the environment's TRL
        # at the 2025.9 Unsloth release)"): pip installed the newest TRL the rest of the stack
        # allowed on the day the stack gives (an Unsloth release's month, else the commit's day)
        placed = _trl_on_stack_day(stack, exact, uses_vllm)
        if placed:
            exact["trl"] = placed
    if "trl" not in exact:
        # the setup states no TRL at all (no version, range or day): installed at a version not
        # known, not the harness's pick (set 23's judge: TRL 0.15.2 drew errors on two healthy
        # setups that never state TRL); the rest as the setup states it
        exact["trl"] = "0+unknown"
        for name, v in stack.items():
            if isinstance(v, str) and v.strip() and name not in exact and name not in NOT_PACKAGES:
                eq = re.match(r"==\s*(\d+\.\d+(?:\.\d+)?(?:\+[\w.]+)?)", v.strip())
                exact[name] = eq.group(1) if eq else "0+unknown"  # a pin, else installed, unknown
        for name, v in stack.items():
            if _not_installed(v):
                exact.pop(name, None)
        return exact
    given = set(exact)
    # a vLLM that comes with TRL's [vllm] extra ("via trl[vllm] extra"): installed by a pip run
    # after the torch the stack names (a Dockerfile's earlier RUN, a base image), and vLLM pins
    # torch exactly, so pip replaces that torch with vLLM's own: the torch is vLLM's, not given
    if "vllm" not in given and re.search(r"trl\[vllm\]", str(stack.get("vllm") or "")):
        given.discard("torch")
    for name, v in _line(exact["trl"]).items():
        exact.setdefault(name, v)
    ranges = {
        name: RANGE.match(v.strip()).group(1)
        for name, v in stack.items()
        if isinstance(v, str) and RANGE.match(v.strip()) and versions_spec_ok(RANGE.match(v.strip()).group(1))
    }
    ranges = {**undated, **ranges}
    line = _line(exact["trl"])
    _consistent(exact, given, ranges, uses_vllm)
    # every other package the stack bounds by a range and no exact version: the newest release
    # the range allows that is consistent with the rest, as pip installs it
    for name, spec in ranges.items():
        if name not in given and name != "trl" and name not in NOT_PACKAGES and versions_spec_ok(spec):
            others = {n: v for n, v in exact.items() if n != name}
            prefer = exact.get(name) or line.get(name)  # what the rest of the stack brought
            placed = _pip_pick(name, spec, others, uses_vllm, prefer) or _pip_pick(
                name, spec, {n: exact[n] for n in given if n != name}, uses_vllm, prefer
            )
            if placed:
                exact[name] = placed
    # a package the stack names as installed without its version ("unsloth": "mid-2025 release
    # (not stated)"): installed, at a version no rule's range matches
    for name, v in stack.items():
        if (
            name != "note"
            and isinstance(v, str)
            and v.strip()
            and name not in exact
            and not RANGE.match(v.strip())
        ):
            exact[name] = "0+unknown"
    # a package the stack says is not installed ("vllm": "not installed (required by
    # fast_inference=True)"): absent from the machine, whatever TRL's line would bring
    for name, v in stack.items():
        if _not_installed(v):
            exact.pop(name, None)
    return exact


def _stack_day(stack: dict) -> str | None:
    """The day a stack was installed, as its notes give it: the last day of the month of an
    Unsloth release it names exactly (``2025.9.7``: Unsloth's versions are year.month.n), else a
    commit's or install's day a note names (``commit 2026-03-22``); None where none does."""
    unsloth = LEAD.match(str(stack.get("unsloth") or "").strip())
    cal = re.fullmatch(r"(20\d\d)\.(\d{1,2})\.\d+", unsloth.group(1)) if unsloth else None
    if cal and 1 <= int(cal.group(2)) <= 12:
        return f"{cal.group(1)}-{int(cal.group(2)):02d}-31"
    said = " ".join(str(v) for v in stack.values())
    day = re.search(r"\b(?:commit|installed|install)\w*\W{0,3}(20\d\d-\d\d-\d\d)\b", said)
    return day.group(1) if day else None


def _trl_on_stack_day(stack: dict, exact: dict[str, str], uses_vllm: bool) -> str | None:
    """The newest TRL out on the stack's day (``_stack_day``) that is consistent with the exact
    versions the stack gives (envdoctor's resolver: Unsloth's and vLLM's bounds), as pip picks
    it; None without a day or a consistent release."""
    from envdoctor import versions

    day = _stack_day(stack)
    out = [v for v, up in TRL_RELEASES.items() if up <= day] if day else []
    if not out:
        return None
    newest = max(out, key=versions.sort_key)
    return _pip_pick("trl", f"<={newest}", {n: v for n, v in exact.items() if n != "trl"}, uses_vllm)


def _origin(note: object) -> str | None:
    """Where the stack note says TRL was built from, as pip records it (PEP 610 direct_url.json,
    envdoctor's ``origin`` fact): a fork or custom branch ("custom branch andyl98/trl … @ ccc9547",
    "fork groundlight/trl (editable ../trl…") is ``git+https://github.com/<owner>/trl.git[@sha]``;
    TRL's own repository ("trl @ git main", "huggingface/trl@sha") likewise with huggingface;
    None for a release from the index (the note names neither)."""
    if not isinstance(note, str):
        return None
    sha = re.search(r"@\s*([0-9a-f]{7,40})\b", note)
    at = f"@{sha.group(1)}" if sha else ""
    fork = re.search(r"\b(?:fork|custom branch)\b[^()]*?\b([A-Za-z0-9-]+)/trl\b", note)
    if fork and fork.group(1).lower() != "huggingface":
        return f"git+https://github.com/{fork.group(1)}/trl.git{at}"
    if re.search(r"huggingface/trl|trl @ git|git\+https://github\.com/huggingface/trl", note):
        return f"git+https://github.com/huggingface/trl.git{at}"
    return None


#: a value a collector copied from the script's ``GRPOConfig(...)`` call that is code, not a
#: literal (``bf16: 'torch.cuda.is_bf16_supported()'``): computed by the script at run time
_CODE_VALUE = re.compile(
    r"""^(\s*\w+:\s*)(['"]?)(?:(?:not\s+)?[\w.]+\([^()]*\)|<[^<>]+>)\2\s*(?:#.*)?$"""
)  # a call the script makes, or the collector's <placeholder> for a value it computes


#: ... or an expression the collector wrote out (``"16 / (4 * torch.cuda.device_count())"``,
#: ``'maximum_length + 1 (computed)'``): an operator between spaces, or the word "computed"
_EXPR_VALUE = re.compile(
    r"""^\s*\w+:\s*(?:(['"])(?=[^'"]*(?:\s[-+*/]\s|\bcomputed\b))[^'"]*\1"""
    r"""|(?=[^'"#]*\s[-+*/]\s)(?=[^'"#]*[A-Za-z_(])[^'"#]*?)\s*(?:#.*)?$"""
)  # quoted, or unquoted with a name in it (``max_steps: len(dataset) * num_train_epochs``)


def _drop_code_values(config: Path) -> None:
    """In a config the collector reconstructed from the script's ``GRPOConfig(...)`` (its first
    line says so: "reconstructed", or the ``GRPOConfig(...)`` call it was taken from), the keys
    whose value was an expression the script computes (a call, or the collector's
    ``<placeholder>`` for it) are left out: no config file holds them; the real setup
    passes them in code, which envdoctor reads from the script (a non-literal keyword: unknown).
    Published configs are left as they are."""
    if not config.is_file():
        return
    lines = config.read_text(errors="replace").splitlines(keepends=True)
    if not lines or ("reconstructed" not in lines[0] and "GRPOConfig(" not in lines[0]):
        return
    kept = [
        x for x in lines if not _CODE_VALUE.match(x.rstrip("\n")) and not _EXPR_VALUE.match(x.rstrip("\n"))
    ]
    if len(kept) != len(lines):
        config.write_text("".join(kept))


def _declares(setup: Path) -> bool:
    """Whether the setup holds a stack declaration of its repository (requirements_finetune.txt,
    pyproject.toml…): the hook then judges those, as on the repository, and no requirements.txt
    of the stack note is added beside them (merged with a pyproject's ranges, the note's exact
    torch read as one declared stack no pip could install: set 17's qwen3_math_ft DCL003)."""
    from envdoctor.facts.declared import is_declaration  # the hook's own declared readers

    return (
        any(is_declaration(str(f)) for f in setup.iterdir() if f.is_file())
        or (setup / "requirements").is_dir()
    )


def _notes(stack: dict) -> dict:
    """stack.json as the harness reads it: a package's ``{"version": …, "note": …}`` (set 20's
    collectors wrote it so) as the one string earlier sets give, "version (note)"."""
    out = {}
    for name, v in stack.items():
        if isinstance(v, dict):
            version, note = str(v.get("version") or ""), str(v.get("note") or "")
            # no version: the note alone ({"version": null, "note": "not used"} is "not used")
            v = (f"{version} ({note})" if version else note) if note else version
        out[name] = v
    return out


def setups(out: Path) -> None:
    from tests.conftest import H100, snapshot

    res = {}
    only = os.environ.get("HELDOUT_ONLY", "")  # a part of a setup's name: run only those
    for d in sorted(p for p in (DATA / "setups").iterdir() if p.is_dir() and only in p.name):
        stack, gpus = (
            _notes(json.loads((d / "stack.json").read_text())),
            json.loads((d / "gpus.json").read_text()),
        )
        tmp = Path(tempfile.mkdtemp(prefix="setup-"))
        for f in d.iterdir():
            if f.is_dir():  # a folder of the setup (src/, recipes/): at its place, as published
                shutil.copytree(f, tmp / f.name, symlinks=True)
            elif f.name not in ("label.json", "stack.json", "gpus.json", "launch.txt"):
                shutil.copy(f, tmp / f.name)
        _drop_code_values(tmp / "config.yaml")
        reqs = []
        for name, v in stack.items():
            v = v.strip() if isinstance(v, str) else ""
            if LEAD.match(v) and not v.startswith(("<", ">", "=")):
                line = re.sub(r"\.x$", ".0", LEAD.match(v).group(1))
                reqs.append(f"{name}=={line}")
            elif RANGE.match(v):
                reqs.append(f"{name}{RANGE.match(v).group(1)}")
            elif v.lower().startswith("unpinned"):  # declared without a version: a bare name
                reqs.append(name)
        if not _declares(d):  # the repository's own declarations are what the hook judges
            (tmp / "requirements.txt").write_text("\n".join(reqs) + "\n")
        launch = _commands(d)
        trainer = _trainer_line(launch)
        if not trainer and (d / "train.py").is_file():
            trainer = "python train.py"  # a notebook's cells (train.py) with only install lines
        servers = [x for x in launch if x != trainer and any(w in x for w in SERVER_WORDS)]
        toks = split_words(trainer) if trainer else []  # a `$(…)` stays one word
        # a trainer line that runs a shell script after the setup's own `cd DIR` step: the script
        # is the folder's (./launch/grpo.sh of dc-ops-amd/): run from there, as the steps do
        step = next(
            (
                x.split()[1]
                for x in reversed(launch[: launch.index(trainer)] if trainer in launch else launch)
                if re.fullmatch(r"cd\s+[\w.-][\w./-]*", x)
            ),
            None,
        )
        # any trainer line after the setup's `cd DIR` runs from DIR (`cd pipeline; python -m
        # training.train --config configs/e0.yaml` of master-thesis-code: training/ and configs/
        # are pipeline/'s): the line's paths are DIR's, and so is the script the setup holds there
        base = step if step and ".." not in step and (d / step).is_dir() else ""
        if base and toks and toks[0] != "cd":
            toks = ["cd", base, "&&", *toks]
        # the setup's files where its trainer line names them: "--flag path" and "--flag=path",
        # and its training script (train.py) at the script path of the line
        pairs = [(t, toks[i + 1]) for i, t in enumerate(toks[:-1])]
        pairs += [tuple(t.split("=", 1)) for t in toks if t.startswith("--") and "=" in t]
        script = next((t for t in toks if t.endswith(".py")), None)
        if (
            script
            and "/" in script
            and (d / "train.py").exists()
            and not (d / Path(script).name).exists()
            and not (d / base / script).is_file()  # the setup holds the script at the line's path
        ):
            pairs.append(("script", script))  # the setup's train.py, unless it holds the script by name
        runs = re.search(r"\bpython[\d.]*\s+(?:-\w+\s+)*-m\s+([\w.]+)", trainer) if not script else None
        module = runs.group(1) if runs else ""  # at the top of the line or inside its bash -c '…'
        if module.split(".")[0] in ("accelerate", "torch", "deepspeed", "trl", "vllm"):
            module = ""  # a launcher's or TRL's own module, not the setup's script
        held = (
            any((d / base / root / (module.replace(".", "/") + ".py")).is_file() for root in ("", "src"))
            if module
            else False
        )  # the setup holds the module at its place (src/pkg/mod.py of a src layout too)
        if module and module.replace(".", "").isidentifier() and (d / "train.py").exists() and not held:
            pairs.append(("script", module.replace(".", "/") + ".py"))  # python -m pkg.train: pkg/train.py
        # accelerate's --config_file / --config-file and TRL's --config, space or = form, at any
        # path the line names (a bare name too: "--config grpo.yaml")
        # the accelerate config as the setup holds it (accelerate_config.yaml, accelerate_zero3.yaml)
        accel = next((f.name for f in sorted(d.glob("accelerate*.y*ml"))), "accelerate_config.yaml")
        # the DeepSpeed JSON the setup holds (zero2.json), where --deepspeed names it
        dsj = next(
            (
                f.name
                for f in sorted(d.glob("*.json"))
                if f.name not in ("label.json", "stack.json", "gpus.json")
            ),
            "zero.json",
        )
        for flags, src in (
            (("--config_file", "--config-file"), accel),
            (("--config",), "config.yaml"),
            (("script",), "train.py"),
            (("--deepspeed",), dsj),
        ):
            for t, path in pairs:
                if src == "config.yaml" and Path(path).suffix.lower() not in (".yaml", ".yml", ".json"):
                    continue  # `--config config1`: a name the script looks up (grpo/grpo.py's), no file
                if t in flags and (d / src).exists() and path and not path.startswith("-") and path != src:
                    if base and (d / base / path).is_file():
                        continue  # the setup holds it at its place under the `cd` folder
                    (tmp / base / path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(d / src, tmp / base / path)
        # any other file of the setup the line names by its own name (configs/one_gpu.yaml for
        # the setup's one_gpu.yaml): placed where the line looks for it
        for _, path in pairs:
            name = Path(path).name if path and not path.startswith("-") else ""
            if name and (d / name).is_file() and not (tmp / base / path).exists() and ".." not in path:
                (tmp / base / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(d / name, tmp / base / path)
        count = _gpu_count(gpus, launch)
        packages: dict = dict(_stack(stack, _uses_vllm(d)))
        origin = _origin(stack.get("trl"))
        if origin and "trl" in packages:  # a build from a git tree, as pip records it
            packages["trl"] = {"version": packages["trl"], "origin": origin}
        # what the stack says is not installed: the snapshot says so (a hand-written snapshot
        # lists what the note pins, not the whole environment)
        gone = sorted(n for n, v in stack.items() if _not_installed(v) and n not in NOT_PACKAGES)
        snap = snapshot(count or 0, _gpu_model(gpus, H100), packages=packages, absent=gone or None)
        if count is None:
            snap["gpus"] = None  # not known: not a machine with no GPU
        if _not_nvidia(gpus):  # an AMD machine: NVML (NVIDIA's) finds no driver there
            snap["gpus"], snap["nvml_error"] = None, NO_NVML
        (tmp / "facts.json").write_text(json.dumps(snap))
        # the files `pre-commit run --all-files` hands the hook: every file of the setup its
        # `files` pattern takes (declarations in subfolders too: code/pyproject.toml), not the
        # harness's own snapshot
        files = sorted(
            str(p.relative_to(tmp))
            for p in tmp.rglob("*")
            if p.is_file() and HOOK_PATTERN.search(str(p.relative_to(tmp))) and p.name not in OWN_FILES
        )
        inputs = ["--facts", "facts.json", "--config", "config.yaml"]
        for s in servers:
            inputs += ["--launch", s]
        inputs += ["--", *toks] if toks else []
        hook = envdoctor(
            ["hook", "--format", "json", *(["--launch", trainer] if trainer else []), *files], tmp
        )
        check = envdoctor(["check", "--format", "json", *inputs], tmp)
        fix = envdoctor(["fix", "--format", "json", *inputs], tmp)
        fixed = fix.get("data") or {}
        recheck = _recheck(tmp, fixed, inputs)
        res[d.name] = {
            "hook": {
                "rc": hook["rc"],
                # what the gate said at warning or error, per file it judged
                "findings": sorted(
                    {
                        f"{f['rule']}:{f['severity']}"
                        for fe in (hook.get("data") or {}).get("files", [])
                        for f in fe["report"].get("findings", [])
                        if f["severity"] != "info"
                    }
                ),
            },
            "check": {"rc": check["rc"], "findings": findings(check.get("data") or {})}
            | ({"said": check["raw"][-400:]} if check.get("raw") else {}),
            "fix": {
                "rc": fix["rc"],
                "before": (fixed.get("before") or {}).get("summary"),
                "after": (fixed.get("after") or {}).get("summary"),
                # what each side said at warning or error: a fix that adds one shows here
                "before_findings": _said(fixed.get("before") or {}),
                "after_findings": _said(fixed.get("after") or {}),
                "launch": (fixed.get("changes") or {}).get("launch"),
                "fixed": fixed.get("fixed"),
                "unfixed": fixed.get("unfixed"),
                "commands": fixed.get("commands"),
            },
            # `check` run again on what `fix` wrote (the config file, the script) with its pip
            # line, environment and launch lines followed: what the user meets after the fix
            "recheck": recheck,
        }
        if os.environ.get("HELDOUT_KEEP"):  # keep the case's folder to run envdoctor on it by hand
            res[d.name]["folder"] = str(tmp)
            res[d.name]["inputs"] = inputs
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    out.write_text(json.dumps(res, indent=1))


def _recheck(tmp: Path, fixed: dict, inputs: list[str]) -> dict | None:
    """``check`` on the files ``fix`` wrote, the snapshot given the fix's packages and environment
    and the run its launch lines: the findings at warning or error (None: fix changed nothing)."""
    changes = fixed.get("changes") or {}
    if not fixed.get("fixed"):
        return None
    facts = json.loads((tmp / "facts.json").read_text())
    for name, version in (changes.get("packages") or {}).items():
        facts["packages"][name] = {"version": version}
    env = changes.get("env") or {}
    for key in env.get("unset") or []:
        facts["env"].pop(key, None)
    facts["env"].update(env.get("set") or {})
    (tmp / "facts_after.json").write_text(json.dumps(facts))
    args = ["--facts", "facts_after.json", "--config", "config.yaml"]
    lines = changes.get("launch")
    if lines:
        for line in lines[:-1]:
            args += ["--launch", line]
        args += ["--", *split_words(lines[-1])]
    else:
        args += inputs[4:]  # the same --launch lines and trainer line as before
    got = envdoctor(["check", "--format", "json", *args], tmp)
    return {"rc": got["rc"], "findings": _said(got.get("data") or {})}


def repos(where: Path, out: Path) -> None:
    res = {}
    # notes as DATA/repos/owner__name.json, or inside each copied tree (owner__name/notes.json)
    notes_files = sorted((DATA / "repos").glob("*.json")) or sorted((DATA / "repos").glob("*/notes.json"))
    for notes_file in notes_files:
        name = notes_file.stem if notes_file.name != "notes.json" else notes_file.parent.name
        repo = where / name
        if not repo.is_dir():
            continue
        notes = json.loads(notes_file.read_text())
        files = sorted(
            str(p.relative_to(repo))
            for p in repo.rglob("*")
            if p.is_file() and HOOK_FILES.search(p.name) and ".git" not in p.parts and p.name != "notes.json"
        )
        pin = json.dumps(notes.get("trl_pin", ""))
        m = re.search(r"(?:==|\")\s*(\d+\.\d+\.\d+)", pin)
        entry: dict = {}
        for mode, extra in (
            ("default", []),
            ("configured", ["--assume", f"trl=={m.group(1)}"] if m else None),
        ):
            if extra is None:
                continue
            got = envdoctor(["hook", "--format", "json", *extra, *files], repo)
            data = got.get("data") or {}
            entry[mode] = {
                "rc": got["rc"],
                "findings": [
                    {**f, "file": fe["file"]}
                    for fe in data.get("files", [])
                    for f in findings(fe["report"])
                    if f["severity"] != "info"
                ],
            }
        res[name] = entry
    out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "logs":
        logs(Path(sys.argv[2]))
    elif kind == "setups":
        setups(Path(sys.argv[2]))
    elif kind == "repos":
        repos(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(__doc__)
