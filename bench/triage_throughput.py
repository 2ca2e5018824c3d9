"""Throughput of `envdoctor triage` on a large GRPO log.

    python bench/triage_throughput.py [--size-mb 1024] [--repeat 3]
        [--log FILE | --flood KIND | --one-line KIND]

Writes the log to a temp file (under $TMPDIR, deleted afterwards): with ``--log``, that log's lines
repeated up to the size, then the failure of a real thread (tests/triage/real) at the end; without
it, a synthetic run — 8 interleaved ranks, ANSI colours, tqdm carriage-return redraws, vLLM engine
logs, NCCL warnings, metrics, harmless warnings with tracebacks, an OOM every 256 MB and NCCL
timeouts at the end; with ``--flood``, distinct error lines (every one holding an anchor, issue 30:
``numbered`` as ``ValueError: distinct failure number N at step M token F``, ``hex`` with a
random 8-digit hex id in each, so that no two share a digit shape), a CUDA OOM in the middle and
at the end; with ``--one-line``, a log of one line without a newline (``write_one_line``).
Then it times, ``--repeat`` times each, the scan in one process, the scan in
one process per CPU (what the CLI does for a big plain file without GNU grep), with GNU grep
as the prefilter (what it does with it), and the whole CLI (a new
`python -m envdoctor triage` process: interpreter start, facts, scan, report; GNU grep finding the
anchors where it is installed, as for any big plain log), and prints the
median MB/s as a table. The file was just written, so it is read from the page cache: the numbers
are the scanner's, not the disk's. The machine's other load shows in them: run it when quiet.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from envdoctor.triage.diagnose import diagnose_scan
from envdoctor.triage.parallel import scan_file, workers
from envdoctor.triage.prefilter import gnu_grep
from envdoctor.triage.scanner import scan

ROOT = Path(__file__).resolve().parent.parent
FAILURE = ROOT / "tests" / "triage" / "real" / "open-r1-384-len-reward.yaml"

MB = 1_000_000
OOM = (
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {r} "
    "has a total capacity of 79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
    "this process has 78.02 GiB memory in use. Of the allocated memory 74.10 GiB is allocated by "
    "PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated.\n"
)
TIMEOUT = (
    "[rank{r}]:[E1101 10:35:02.{r}1 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLGATHER, NumelIn=4, "
    "NumelOut=16, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out.\n"
)


def _block(rng: random.Random, lines: int = 4000) -> bytes:
    """About 1 MB of healthy output from 8 ranks, in random interleaving."""
    out = []
    for i in range(lines):
        r = rng.randrange(8)
        kind = rng.random()
        if kind < 0.3:
            bar = "".join(
                f"\r{p:3d}%|{'█' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<01:40, "
                f"{rng.uniform(1, 9):.2f}it/s]"
                for p in range(0, 101, 20)
            )
            out.append(f"Generating (rank {r}){bar}\n")
        elif kind < 0.55:
            out.append(
                f"\x1b[1;36m(EngineCore_DP0 pid={1000 + r})\x1b[0;0m \x1b[32mINFO\x1b[0m "
                f"11-01 10:{i % 60:02d}:00 [gpu_model_runner.py:{i}] Graph capturing "
                f"finished in {rng.uniform(1, 9):.1f} secs, took {rng.uniform(0, 2):.2f} GiB\n"
            )
        elif kind < 0.8:
            out.append(
                f"[rank{r}]: {{'loss': {rng.uniform(0, 1):.4f}, 'grad_norm': "
                f"{rng.uniform(0, 3):.3f}, 'reward': {rng.uniform(0, 1):.3f}, 'kl': "
                f"{rng.uniform(0, 0.1):.4f}, 'completions/mean_length': "
                f"{rng.uniform(50, 900):.1f}, 'epoch': {i / lines:.3f}}}\n"
            )
        elif kind < 0.9:
            out.append(
                f"[rank{r}]:[W1101 10:00:{i % 60:02d}.{i:06d} ProcessGroupNCCL.cpp:4561] "
                f"[PG ID 0 PG GUID 0 Rank {r}] using GPU {r} to perform barrier\n"
            )
        elif kind < 0.97:
            out.append(
                "/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:87: "
                "UserWarning: None of the inputs have requires_grad=True. Gradients "
                "will be None\n  warnings.warn(\n"
            )
        else:
            out.append(
                f"[rank{r}]: Traceback (most recent call last):\n[rank{r}]:   File "
                f'"/work/reward.py", line {i}, in score\n[rank{r}]: the error rate is '
                f"{rng.uniform(0, 1):.3f} (logged, not raised)\n"
            )
    return "".join(out).encode()


def write_log(path: str, size_mb: int) -> tuple[int, int]:
    """Write about ``size_mb`` MB; returns (bytes written, failures planted)."""
    rng = random.Random(0)
    blocks = [_block(rng) for _ in range(4)]
    target, written, planted, next_oom = size_mb * MB, 0, 0, 256 * MB
    with open(path, "wb") as fh:
        while written < target:
            data = blocks[rng.randrange(len(blocks))]
            fh.write(data)
            written += len(data)
            if written >= next_oom:
                line = OOM.format(r=planted % 8).encode()
                fh.write(line)
                written += len(line)
                planted += 1
                next_oom += 256 * MB
        tail = "".join(TIMEOUT.format(r=r) for r in range(8)).encode()
        fh.write(tail)
        written += len(tail)
    return written, planted


def write_repeated(path: str, source: str, size_mb: int) -> tuple[int, int]:
    """``source``'s lines repeated to about ``size_mb`` MB, a real failure at the end."""
    block = Path(source).read_bytes()
    if not block.endswith(b"\n"):
        block += b"\n"
    block = block * max(1, (4 * MB) // len(block))
    written = 0
    with open(path, "wb") as fh:
        while written < size_mb * MB:
            fh.write(block)
            written += len(block)
        tail = yaml.safe_load(FAILURE.read_text(encoding="utf-8"))["log"].encode()
        fh.write(tail)
    return written + len(tail), 1


FLOODS = {
    "numbered": lambda i, rng: (
        b"ValueError: distinct failure number %d at step %d token %d\n"
        % (i, i * 7 % 100000, rng.randrange(1000))
    ),
    "hex": lambda i, rng: b"ValueError: distinct failure number %d token %08x\n" % (i, rng.getrandbits(32)),
}


def write_flood(path: str, kind: str, size_mb: int) -> tuple[int, int]:
    """About ``size_mb`` MB of distinct error lines of ``kind``, an OOM in the middle and at the end."""
    rng, line = random.Random(0), FLOODS[kind]
    written, i, planted = 0, 0, 0
    with open(path, "wb") as fh:
        while written < size_mb * MB:
            block = b"".join(line(i + k, rng) for k in range(10000))
            i += 10000
            if planted == 0 and written >= size_mb * MB // 2:
                block += OOM.format(r=3).encode()
                planted += 1
            fh.write(block)
            written += len(block)
        tail = OOM.format(r=5).encode()
        fh.write(tail)
    return written + len(tail), planted + 1


def _one_line_block(kind: str) -> bytes:
    """4 MiB of one line of ``kind``: ``words`` (log words and numbers, no anchor), ``errors``
    (``Error: `` repeated, as a hostile test writes it) or ``printable`` (random printable
    ASCII: every byte an anchor holds, the scan's worst case)."""
    rng = random.Random(0)
    size = 4 * 1024 * 1024
    if kind == "errors":
        return (b"Error: " * (size // 7 + 1))[:size]
    if kind == "printable":
        table = bytes(32 + i % 95 for i in range(256))
        return rng.randbytes(size).translate(table)
    words = [b"step", b"loss", b"reward", b"kl", b"grad_norm", b"epoch", b"token", b"the", b"of", b"mean"]
    return b" ".join(rng.choice(words) + b"=%d" % rng.randrange(10000) for _ in range(size // 8))[:size]


def write_one_line(path: str, kind: str, size_mb: int) -> tuple[int, int]:
    """A log of one line of about ``size_mb`` MB (issue 37: a 1 GiB line), no newline at all."""
    block, written = _one_line_block(kind), 0
    with open(path, "wb") as fh:
        while written < size_mb * MB:
            fh.write(block)
            written += len(block)
    return written, 0


def _median(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MB (10^6 bytes)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--log", help="a real log whose lines are repeated (default: synthetic)")
    parser.add_argument("--flood", choices=sorted(FLOODS), help="distinct error lines (issue 30)")
    parser.add_argument(
        "--one-line", choices=["errors", "printable", "words"], help="a log of a single line (issue 37)"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    fd, path = tempfile.mkstemp(suffix=".log", prefix="envdoctor-triage-bench-")
    os.close(fd)
    try:
        t = time.perf_counter()
        if args.one_line:
            size, planted = write_one_line(path, args.one_line, args.size_mb)
            what = f"a single line of {args.one_line}, no newline"
        elif args.flood:
            size, planted = write_flood(path, args.flood, args.size_mb)
            what = f"a flood of distinct {args.flood} error lines, {planted} OOMs planted"
        elif args.log:
            size, planted = write_repeated(path, args.log, args.size_mb)
            what = f"lines of {args.log} repeated, a real failure at the end"
        else:
            size, planted = write_log(path, args.size_mb)
            what = f"synthetic, {planted} OOMs planted, 8 NCCL timeouts at the end"
        print(f"wrote {size / MB:,.0f} MB in {time.perf_counter() - t:.1f} s ({what})")

        def one() -> object:
            with open(path, "rb") as fh:
                result = scan(fh)
            return result, diagnose_scan(result)

        def many(grep: bool = True) -> object:
            result = scan_file(path, grep=grep)
            return result, diagnose_scan(result)

        def many_python() -> object:
            return many(grep=False)

        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        cli_cpu: list[float] = []

        def cli() -> object:  # bytecode cached, as an installed package has it
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run(
                [sys.executable, "-m", "envdoctor", "triage", path, "--format", "json"],
                capture_output=True,
                env=env,
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            return proc

        cli()  # writes the bytecode cache if it is missing
        cli_cpu.clear()

        rows = []
        seconds, (result, found) = _median(one, args.repeat)  # type: ignore[misc]
        rows.append(("scan + diagnose, 1 process", seconds))
        seconds, (merged, _) = _median(many_python, args.repeat)  # type: ignore[misc]
        assert merged.counts == result.counts and merged.lines == result.lines
        rows.append((f"scan + diagnose, {workers()} processes", seconds))
        if gnu_grep():
            seconds, (grepped, _) = _median(many, args.repeat)  # type: ignore[misc]
            assert grepped.counts == result.counts and grepped.lines == result.lines
            rows.append(("scan + diagnose, GNU grep prefilter", seconds))
        seconds, proc = _median(cli, args.repeat)
        rows.append((f"envdoctor triage (CLI, exit {proc.returncode})", seconds))  # type: ignore[attr-defined]
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        print(
            f"{result.lines:,} lines; counts {dict(sorted(result.counts.items()))}; "
            f"findings {[f.rule for f in found]}\n"
        )
        print(f"{'what':<36} {'MB':>8} {'seconds':>8} {'MB/s':>8}")
        for name, secs in rows:
            print(f"{name:<36} {size / MB:>8,.0f} {secs:>8.2f} {size / MB / secs:>8.0f}")
        print(f"\nCPU time of the CLI (its processes and grep's): median {statistics.median(cli_cpu):.2f} s")
        print(f"peak memory of a child process (CLI or scan worker): {rss:.0f} MiB")
        print(
            f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; median of {args.repeat}; "
            f"load average before the runs: {load:.2f}"
        )
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
