"""Fixes written into the training script's own calls: line edits of the keywords its
GRPOConfig(...) calls set (``TrainingScript.config_keywords``), shared by the rules whose remedy
is a keyword the call must also pass (LAY's ``vllm_mode="colocate"``, CFG012's
``gradient_checkpointing_kwargs``)."""

from __future__ import annotations

from typing import Any

from envdoctor.findings import FileEdit


def keyword_edits(script: Any, key: str, insert: str) -> tuple[FileEdit, ...]:
    """Line edits that write ``insert`` just before keyword ``key`` of each GRPOConfig(...) call
    that sets it; () where one is not on a line of its own reach."""
    edits = []
    for place in script.config_keywords.get(key, ()):
        if place.value is None:
            return ()
        line, start, _, text = place.value
        raw = text.encode("utf-8")
        at = raw.rfind(key.encode(), 0, start)
        if at < 0:
            return ()
        new = (raw[:at] + insert.encode() + raw[at:]).decode("utf-8")
        edits.append(FileEdit(path=place.written_in or script.path, line=line, old=(text,), new=(new,)))
    return tuple(edits)
