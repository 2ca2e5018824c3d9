"""Every parser, any input: a result or a clear InputError, never another exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.errors import InputError
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.config_files import read_mapping
from envdoctor.plan.launch import parse_launches, parse_script_args
from envdoctor.versions import cuda_of_torch, parse, satisfies

EXAMPLES = 300
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=120))
def test_launch_lines(text):
    try:
        launches = parse_launches(text)
    except InputError as exc:
        assert exc.source == "launch command"
        return
    for lx in launches:
        parse_script_args(lx.script_args)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "accelerate",
                "launch",
                "torchrun",
                "python",
                "-m",
                "--x",
                "--num_processes",
                "2",
                "t.py",
                "=",
                "--a=b",
                ";",
                "&&",
                "trl",
                "vllm-serve",
                "CUDA_VISIBLE_DEVICES=0",
                "export",
            ]
        ),
        max_size=12,
    )
)
def test_launch_token_soup(tokens):
    try:
        parse_launches(" ".join(tokens))
    except InputError:
        pass


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_config_files(tmp_path, data):
    path = tmp_path / "c.yaml"
    path.write_bytes(data)
    try:
        assert isinstance(read_mapping(path, "GRPO config"), dict)
    except InputError as exc:
        assert str(path) in str(exc)


@settings(max_examples=EXAMPLES, deadline=None)
@given(json_values)
def test_snapshots(value):
    for data in (
        value,
        {"schema": "envdoctor.facts/1", "gpus": value},
        {"schema": "envdoctor.facts/1", "packages": value, "env": value},
    ):
        try:
            from_dict(json.loads(json.dumps(data)), "s.json")
        except InputError:
            pass


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_versions(version, spec):
    parse(version)
    cuda_of_torch(version)
    assert satisfies(version, spec) in (True, False, None)
