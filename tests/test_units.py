"""envdoctor.units: one size formatter and one size parser, each output as it was written before."""

from __future__ import annotations

import pytest

from envdoctor.units import GiB, KiB, MiB, TiB, billions, parse_size, size_text


@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        ((int(23.8 * GiB),), {}, "23.8 GiB"),  # the memory plan
        ((2 * GiB,), {"digits": 2}, "2.00 GiB"),  # triage's vGPU cap
        ((3 * GiB + 1,), {"digits": 0}, "3 GiB"),
        ((81559,), {"of": "MiB"}, "79.6 GiB"),  # NVML's MiB (probe, cluster, doctor)
        ((412,), {"of": "MiB", "step_down": True}, "412 MiB"),  # the probe's judge
        ((1024,), {"of": "MiB", "step_down": True}, "1.0 GiB"),
        ((412.4,), {"of": "MiB", "digits": 2, "step_down": True}, "412 MiB"),  # triage's OOM sizes
        ((2048.0,), {"of": "MiB", "digits": 2, "step_down": True}, "2.00 GiB"),
        ((None,), {}, "?"),
        ((8 * MiB + 5, "MiB"), {"floor": True}, "8 MiB"),  # limits
        ((64 * KiB, "KiB"), {"floor": True}, "64 KiB"),
        ((512 * KiB + 7, "MiB"), {"floor": True, "step_down": True}, "512 KiB"),  # NCCL message sizes
        ((3000 * MiB, "MiB", 0), {"step_down": True, "grouped": True}, "3,000 MiB"),  # decompression
        ((1536, "MiB", 0), {"step_down": True, "grouped": True}, "2 KiB"),
        ((int(79.6 * GiB),), {"with_unit": False}, "79.6"),  # plan-memory's GiB column
    ],
)
def test_size_text(args, kwargs, text):
    assert size_text(*args, **kwargs) == text


def test_size_text_matches_the_formatters_it_replaced():
    for mib in (0, 1, 1023, 1024, 1025, 40960, 81559, 143771):
        assert size_text(mib, of="MiB") == f"{mib / 1024:.1f} GiB"
        assert size_text(mib, of="MiB", step_down=True) == (
            f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib} MiB"
        )
        assert size_text(mib + 0.37, of="MiB", digits=2, step_down=True) == (
            f"{(mib + 0.37) / 1024:.2f} GiB" if mib + 0.37 >= 1024 else f"{mib + 0.37:.0f} MiB"
        )
    for n in (0, 1023, 1024, MiB - 1, MiB, 3 * MiB + 17, 5 * GiB + 3):
        assert size_text(n) == f"{n / 1024**3:.1f} GiB"
        assert size_text(n, "MiB", floor=True, step_down=True) == (
            f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"
        )
        assert size_text(n, "MiB", 0, step_down=True, grouped=True) == (
            f"{n / 1024**2:,.0f} MiB" if n >= 1024**2 else f"{n / 1024:,.0f} KiB"
        )


@pytest.mark.parametrize(
    ("number", "unit", "kwargs", "value"),
    [
        ("80", None, {}, 80 * GiB),  # plan-memory --gpu-memory: a bare number is GiB
        ("81559", "MiB", {}, 81559 * MiB),
        ("80", "G", {}, 80 * GiB),
        ("2.00", "GiB", {"default": "MiB", "into": "MiB"}, 2048.0),  # PyTorch's OOM message
        ("512", "KiB", {"default": "MiB", "into": "MiB"}, 0.5),
        ("1", "TB", {"default": "MiB", "into": "MiB"}, 1024.0**2),
        ("1048576", "bytes", {"default": "MiB", "into": "MiB"}, 1.0),
        ("7", "furlongs", {"default": "MiB", "into": "MiB"}, 7.0),  # unknown unit: the default
        ("1.2.3", "GiB", {}, None),
        (None, "GiB", {}, None),
        ("", "GiB", {"into": "GiB"}, None),
    ],
)
def test_parse_size(number, unit, kwargs, value):
    assert parse_size(number, unit, **kwargs) == value


def test_billions():
    assert billions(1_543_714_304) == "1.54B"
    assert billions(7.6e9, 1) == "7.6B"
    assert TiB == 1024 * GiB


def test_a_model_label_states_the_count_once():
    from envdoctor.units import model_label

    assert model_label("Qwen/Qwen2.5-7B-Instruct", 7.62e9) == "Qwen/Qwen2.5-7B-Instruct, 7.62B parameters"
    assert model_label("7.6B parameters", 7.6e9) == "7.60B parameters"  # a bare --model-params
