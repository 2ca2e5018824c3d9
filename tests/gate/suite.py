"""The gate's suite of real repositories (tests/gate/repos/{dev,held}/<name>/: the files the hook
reads, exported at one commit by scripts/gate_suite_export.py, then cut to what the labelled
findings need by scripts/gate_suite_minimize.py; SOURCE.txt names it). Each has
``labels.yaml``: how a maintainer configures the hook for it (``configured``: the ``--assume``
of the versions the repository pins, per docs/ci.md) and every finding the hook prints, labelled
true or false with its evidence. ``python -m tests.gate.suite [dev|held]`` prints the table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent / "repos"
HALVES = ("dev", "held")


def repos(half: str) -> list[Path]:
    return sorted(p for p in (HERE / half).iterdir() if p.is_dir())


def config_files(repo: Path) -> list[str]:
    """What docs/ci.md's workflow passes: ``git ls-files '*.yaml' '*.yml' '*.json'``."""
    out = [
        str(p.relative_to(repo))
        for p in repo.rglob("*")
        if p.is_file() and p.suffix in (".yaml", ".yml", ".json") and p.name != "labels.yaml"
    ]
    return sorted(out)


def run_hook(repo: Path, tmp: Path, extra: list[str]) -> tuple[int, list[dict]]:
    """Run ``envdoctor hook`` (JSON) on a copy of ``repo``: exit status and the findings
    (rule, severity, file, key) of every checked file."""
    work = tmp / repo.name
    if not work.exists():
        shutil.copytree(repo, work, ignore=shutil.ignore_patterns("labels.yaml"))
    files = config_files(work)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    stopped: list[dict] = []
    for _ in range(5):
        cmd = [sys.executable, "-m", "envdoctor", "hook", "--format", "json", *extra, *files]
        done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=300)
        if done.returncode != 2:
            break
        # a file the hook cannot judge stops it, naming the file (red); the rest of the tree is
        # judged without it, as after the maintainer mends it
        named = next((f for f in files if f in done.stderr), None)
        stopped.append(
            {
                "target": named or "",
                "rule": "EXIT2",
                "severity": "error",
                "key": "",
                "message": done.stderr[-500:],
            }
        )
        if named is None:
            return 2, stopped
        files = [f for f in files if f != named]
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{repo.name}: exit {done.returncode}: {done.stderr[-2000:]}")
    findings = []
    for item in json.loads(done.stdout)["files"]:
        for f in item["report"].get("findings", []):
            if f["severity"] in ("error", "warning"):
                findings.append(
                    {
                        "target": item["file"],
                        "rule": f["rule"],
                        "severity": f["severity"],
                        "key": str(
                            (f.get("evidence") or {}).get("key") or (f.get("evidence") or {}).get("id") or ""
                        ),
                        "message": f["message"],
                    }
                )
    return (2 if stopped else done.returncode), stopped + findings


def labels(repo: Path) -> dict:
    path = repo / "labels.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


def kinds(findings: list[dict]) -> set[tuple[str, str]]:
    """A finding's kind: its rule and key (or catalogue id)."""
    return {(f["rule"], f["key"]) for f in findings}


def judge(repo: Path, tmp: Path) -> dict:
    """Both runs of one repository against its labels: false kinds, red or not, unlabelled kinds."""
    lab = labels(repo)
    out = {}
    for mode, extra in (("default", []), ("configured", list(lab.get("configured") or []))):
        rc, found = run_hook(repo, tmp, extra)
        table = {(x["rule"], str(x.get("key", ""))): x for x in (lab.get("findings") or [])}
        seen = kinds(found)
        out[mode] = {
            "exit": rc,
            "kinds": sorted(seen),
            "false": sorted(k for k in seen if k in table and table[k]["label"] is False),
            "unlabelled": sorted(k for k in seen if k not in table),
            "false_red": rc in (1, 2)
            and not any(
                f["severity"] == "error" and table.get((f["rule"], f["key"]), {}).get("label") for f in found
            ),
            "findings": found,
        }
    return out


if __name__ == "__main__":
    import tempfile

    for half in sys.argv[1:] or HALVES:
        for repo in repos(half):
            with tempfile.TemporaryDirectory() as tmp:
                got = judge(repo, Path(tmp))
            for mode, r in got.items():
                print(
                    f"{half}/{repo.name} {mode}: exit {r['exit']}, kinds {len(r['kinds'])}, "
                    f"false {r['false']}, false red {r['false_red']}, unlabelled {r['unlabelled']}"
                )
