"""plan-memory's text report draws one stacked bar per GPU group (issue #28, 10); JSON unchanged."""

from __future__ import annotations

import json

from envdoctor.commands.plan_memory import BAR, stacked_bar
from tests.conftest import snapshot
from tests.memory.configs import QWEN25_05B, QWEN25_7B

GiB = 1024**3


def _row(parts: dict[str, float], cap: float) -> dict:
    ps = [{"part": k, "bytes": int(v * GiB), "at_peak": True} for k, v in parts.items()]
    return {"parts": ps, "capacity_bytes": int(cap * GiB), "total_bytes": sum(p["bytes"] for p in ps)}


def test_bar_stacks_the_parts_in_proportion_and_shows_free():
    bar = stacked_bar(
        _row(
            {
                "weights": 20,
                "gradients": 10,
                "optimizer states": 20,
                "activations": 10,
                "vLLM (gpu_memory_utilization)": 10,
                "CUDA context": 10,
            },
            100,
        )
    )
    assert len(bar) == BAR
    assert bar == "W" * 11 + "G" * 6 + "O" * 11 + "A" * 6 + "V" * 5 + "+" * 6 + "·" * 11


def test_bar_past_the_card_marks_its_size():
    bar = stacked_bar(_row({"weights": 150, "optimizer states": 50}, 100))
    assert bar.index("|") == BAR // 2 and "·" not in bar and len(bar) == BAR + 1


def _cli(*args):
    from tests.conftest import run_cli

    return run_cli("plan-memory", *args)


def test_text_report_has_one_bar_line_per_group_within_100_columns(write_json, model_dir):
    facts = str(write_json(snapshot(n_gpus=2), "facts.json"))
    launch = ["--", "torchrun", "--nproc_per_node", "2", "train.py"]
    out = _cli("--facts", facts, "--model", model_dir(QWEN25_7B), *launch)
    bars = [ln for ln in out.stdout.splitlines() if "[" in ln and ln.startswith("GPUs")]
    assert len(bars) == 1 and bars[0].startswith("GPUs 0–1 [") and bars[0].endswith(" over")
    assert "at the peak: W weights" in out.stdout
    assert all(len(ln) <= 100 for ln in bars)
    js = json.loads(
        _cli("--facts", facts, "--model", model_dir(QWEN25_05B), "--format", "json", *launch).stdout
    )
    assert set(js) == {"model", "setup", "assumed", "measured", "host", "gpus", "findings"}
    assert "·" not in json.dumps(js, ensure_ascii=False) and "at the peak" not in json.dumps(js)


def test_the_longest_line_stays_within_100_columns():
    from envdoctor.commands.plan_memory import _bars

    row = dict(_row({"weights": 2000, "optimizer states": 2000}, 1024), gpu=None, role="rank 0")
    rows = [dict(row, gpu=g) for g in (0, 2, 5, 7, 9, 11, 13)]
    lines = _bars({"gpus": rows})
    assert lines[2].startswith("GPUs 0, 2, 5, 7…") and all(len(ln) <= 100 for ln in lines)
