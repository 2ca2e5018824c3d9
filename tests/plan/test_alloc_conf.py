"""PYTORCH_CUDA_ALLOC_CONF parsing, as torch's allocator config reads it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.plan.alloc_conf import parse_alloc_conf


def test_valid_options():
    c = parse_alloc_conf(
        "expandable_segments:True,max_split_size_mb:128,"
        "roundup_power2_divisions:[256:1,>:4],garbage_collection_threshold:0.6"
    )
    assert c.problems == [] and c.expandable_segments
    assert c.options["roundup_power2_divisions"] == "[256:1,>:4]"


def test_unknown_key_and_bad_values():
    c = parse_alloc_conf("expandable_segment:True,max_split_size_mb:10,backend:foo,nokey")
    text = " ".join(c.problems)
    assert "Unrecognized CachingAllocator option: expandable_segment" in text
    assert "must be >= 20" in text and "native or cudaMallocAsync" in text
    assert "key:value" in text


def test_backend_async_with_expandable():
    c = parse_alloc_conf("backend:cudaMallocAsync,expandable_segments:True")
    assert any("no effect" in p for p in c.problems)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_never_raises(value):
    c = parse_alloc_conf(value)
    assert isinstance(c.problems, list)
