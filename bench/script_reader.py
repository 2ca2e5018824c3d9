"""Time the training-script reader (envdoctor/plan/script_reader.py) on scripts and repositories
it generates: a TRL OpenEnv-shaped script, an open-r1-shaped package, a script at the size cap, a repository
of many modules for the hook's walk, and files it must refuse (50 MB, binary).

    python bench/script_reader.py [--runs 5] [--files 400]

Prints a table: median and worst wall time per input, and what was read. CPU load from other
processes shows in the numbers: compare rows of one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.plan.repository_keys import repository_keys  # noqa: E402
from envdoctor.plan.script_reader import MAX_FILE_BYTES, read_script  # noqa: E402
from tests.plan.script_shapes import OPEN_R1_CONFIGS, OPEN_R1_GRPO, OPENENV  # noqa: E402


def _write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _big_script() -> str:
    """Argparse options and GRPOConfig keywords up to just under the size cap (dense code)."""
    lines = ["import argparse", "from trl import GRPOConfig", "p = argparse.ArgumentParser()"]
    i = 0
    while sum(len(line) + 1 for line in lines) < MAX_FILE_BYTES - 20_000:
        lines.append(f"p.add_argument('--option-number-{i}', type=int, default={i}, help='x' * 3)")
        i += 1
    lines.append("GRPOConfig(" + ", ".join(f"k{j}={j}" for j in range(200)) + ")")
    return "\n".join(lines) + "\n"


def _repository(root: Path, files: int) -> None:
    _write(root, "src/pkg/configs.py", OPEN_R1_CONFIGS)
    _write(root, "src/pkg/grpo.py", OPEN_R1_GRPO.replace("open_r1", "pkg"))
    for i in range(files):
        body = "\n".join(
            [f"from dataclasses import dataclass\n\n@dataclass\nclass Thing{i}:\n    a: int = 1\n"]
            + [f"def f{j}(x):\n    return [y * {j} for y in range(x) if y % 3]\n" for j in range(40)]
        )
        _write(root, f"src/pkg/mod_{i:04d}.py", body)
    for i in range(files):  # a virtualenv: never entered
        _write(root, f".venv/lib/site-packages/p{i}.py", "from dataclasses import dataclass\n")


def _time(fn: Callable[[], object], runs: int) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wordle = _write(root, "wordle.py", OPENENV["wordle"])
        _write(root, "r1/setup.py", "")
        _write(root, "r1/src/open_r1/__init__.py", "")
        _write(root, "r1/src/open_r1/configs.py", OPEN_R1_CONFIGS)
        r1 = _write(root, "r1/src/open_r1/grpo.py", OPEN_R1_GRPO)
        big = _write(root, "big.py", _big_script())
        huge = root / "huge.py"
        with huge.open("wb") as fh:
            fh.truncate(50 * 1024 * 1024)
        binary = _write(root, "binary.py", b"\x7fELF\x00" * 40_000)
        _repository(root / "repo", args.files)
        rows = [
            ("OpenEnv-shaped script", lambda: read_script(wordle), lambda d: f"{len(d.flags)} options"),
            (
                "open-r1-shaped package",
                lambda: read_script(r1),
                lambda d: f"{len(d.keys())} keys, {len(d.files)} files",
            ),
            (
                f"{MAX_FILE_BYTES // 1024} KiB script (the cap)",
                lambda: read_script(big),
                lambda d: d.problem or f"{len(d.flags)} options",
            ),
            ("50 MB script (refused)", lambda: read_script(huge), lambda d: d.problem.split(" ", 1)[-1]),
            ("200 KB binary (refused)", lambda: read_script(binary), lambda d: d.problem.split(" ", 1)[-1]),
            (
                f"repository, {args.files} modules + venv",
                lambda: repository_keys(root / "repo"),
                lambda r: f"{len(r.keys)} keys, {r.files_parsed} parsed",
            ),
        ]
        print(f"{'input':<36} {'median':>9} {'worst':>9}  read")
        for label, fn, said in rows:
            median, worst, result = _time(fn, args.runs)
            print(f"{label:<36} {median * 1000:>7.1f} ms {worst * 1000:>6.1f} ms  {said(result)}")


if __name__ == "__main__":
    main()
