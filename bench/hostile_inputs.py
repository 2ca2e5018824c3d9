"""Time envdoctor on the inputs of issue 19 built to exhaust time or memory.

    python bench/hostile_inputs.py

Prints a table: input, exit code, wall seconds, peak RSS (MiB) of the process. Each run is the
real CLI in a new process in a scratch folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import snapshot  # noqa: E402


def _laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def write_inputs(d: Path) -> None:
    """The input files (run in a child process: the parent's resident memory would count in
    every run's peak RSS, as a forked child starts from it)."""
    good = d / "good.json"
    good.write_text(json.dumps(snapshot(2)))
    snap = snapshot(1)
    snap["gpus"] = [dict(snap["gpus"][0], index=i, uuid=f"GPU-{i}") for i in range(30_000)]
    (d / "gpus.json").write_text(json.dumps(snap))
    unused = snapshot(2)
    (d / "digits.json").write_text(json.dumps(unused)[:-1] + ', "x": ' + "7" * 3_000_000 + "}")
    host = snapshot(2)
    host["hostname"] = "h" * (60 * 1024 * 1024)
    (d / "host.json").write_text(json.dumps(host))
    alloc = snapshot(2)
    alloc["env"] = {"PYTORCH_CUDA_ALLOC_CONF": "bad:1," * 10_000}
    (d / "alloc.json").write_text(json.dumps(alloc))
    (d / "laughs.yaml").write_text(_laughs())
    (d / "odd.yaml").write_text("num_generations: 7\nper_device_train_batch_size: 123456789012345\n")
    (d / "million.yaml").write_text("per_device_train_batch_size: " + "7" * 1_000_000 + "\n")
    (d / "long.yaml").write_text("output_dir: " + "d" * (7 * 1024 * 1024) + "\n")
    (d / "keys.yaml").write_text("".join(f"unknown_key_{i}: 1\n" for i in range(80_000)))
    for i in range(1000):
        (d / f"h{i}.yaml").write_text("num_generations: 4\nper_device_train_batch_size: 4\n")


def cases(d: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    good = d / "good.json"
    hook = [str(d / f"h{i}.yaml") for i in range(1000)]
    check = ["check", "--no-network", "--facts"]
    launch = ["--", "torchrun", "--nproc_per_node", "1", "t.py"]
    return [
        ("snapshot: 30,000 GPUs", [*check, "gpus.json", *launch], {}),
        ("snapshot: 3,000,000-digit number, unused key", [*check, "digits.json"], {}),
        ("snapshot: 60 MiB hostname (diff)", ["diff", str(good), "host.json"], {}),
        ("snapshot: 60 KB PYTORCH_CUDA_ALLOC_CONF", [*check, "alloc.json", *launch], {}),
        ("config: billion laughs", [*check, str(good), "--config", "laughs.yaml"], {}),
        ("config: odd 15-digit batch size", [*check, str(good), "--config", "odd.yaml"], {}),
        ("config: million-digit batch size", [*check, str(good), "--config", "million.yaml"], {}),
        ("config: 7 MiB string value, -v", [*check, str(good), "--config", "long.yaml", "-v"], {}),
        ("config: 80,000 unknown keys", [*check, str(good), "--config", "keys.yaml"], {}),
        ("hook: 1,000 configs", ["hook", "--ignore", "PKG", *hook], {}),
        (
            "live env: 100 KB PYTORCH_CUDA_ALLOC_CONF",
            ["check", "--no-network", *launch],
            {"PYTORCH_CUDA_ALLOC_CONF": "bad:1," * 20_000},
        ),
        ("triage: /proc/self/pagemap", ["triage", "/proc/self/pagemap", "--facts", str(good)], {}),
        ("config: /dev/zero", [*check, str(good), "--config", "/dev/zero"], {}),
    ]


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        write_inputs(Path(sys.argv[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        subprocess.run([sys.executable, __file__, "--write", tmp], check=True)
        rows = []
        for name, args, env in cases(d):
            full = {**os.environ, "NO_COLOR": "1", **env}
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "envdoctor", *args],
                cwd=d,
                env=full,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            rows.append((name, code, wall, usage.ru_maxrss / 1024))
    width = max(len(r[0]) for r in rows)
    print(f"{'input':<{width}}  exit  wall s  peak RSS MiB")
    for name, code, wall, rss in rows:
        print(f"{name:<{width}}  {code:>4}  {wall:>6.2f}  {rss:>12.0f}")


if __name__ == "__main__":
    main()
