"""Cross-node differences (CLU001–CLU004): each fires on the difference that breaks training and
stays quiet on what is expected to differ."""

from __future__ import annotations

import pytest

from envdoctor.cluster.compare import NodeView, compare
from envdoctor.facts.snapshot import from_dict
from tests.conftest import A100_40, MODERN, snapshot


def view(label: str, runtime: dict | None = None, **kw) -> NodeView:
    return NodeView(label, from_dict(snapshot(**kw), label), runtime or {})


def rules(found) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in found]


def test_identical_nodes_and_a_single_node_are_quiet():
    assert compare([view("node 0"), view("node 1"), view("node 2")]) == []
    assert compare([view("node 0", packages={**MODERN, "vllm": "0.1.0"})]) == []


def test_a_stack_package_names_both_versions_and_the_nodes_to_change():
    found = compare([view("node 0 (a)"), view("node 1 (b)", packages={**MODERN, "vllm": "0.7.2"})])
    assert rules(found) == [("CLU001", "error")]
    f = found[0]
    assert f.message == "vllm differs across nodes: 0.30.0 on node 0 (a); 0.7.2 on node 1 (b)"
    assert "pip install 'vllm==0.30.0' on node 1 (b)" in f.fix
    assert f.evidence["values"] == {"node 0 (a)": "0.30.0", "node 1 (b)": "0.7.2"}


def test_the_reference_is_what_most_nodes_have():
    odd = {**MODERN, "transformers": "4.49.0"}
    found = compare([view("node 0", packages=odd), view("node 1"), view("node 2")])
    assert "pip install 'transformers==5.23.0' on node 0" in found[0].fix


def test_a_package_missing_on_one_node():
    found = compare([view("A"), view("B", packages={k: v for k, v in MODERN.items() if k != "vllm"})])
    assert found[0].message == "vllm differs across nodes: 0.30.0 on A; not installed on B"
    assert "pip install 'vllm==0.30.0' on B" in found[0].fix


def test_packages_outside_the_stack_are_one_info():
    found = compare(
        [
            view("A", packages={**MODERN, "rich": "13.0"}),
            view("B", packages={**MODERN, "rich": "14.1", "nvidia-ml-py": "12.0"}),
        ]
    )
    assert rules(found) == [("CLU001", "info")]
    assert "2 packages outside the training stack differ" in found[0].message
    assert found[0].evidence["packages"]["rich"] == {"A": "13.0", "B": "14.1"}


def test_python_minor_version():
    a, b = view("A"), view("B")
    b.facts.python = "3.12.1"
    found = compare([a, b])
    assert rules(found) == [("CLU001", "error")] and "Python differs" in found[0].message


def test_torch_cuda_build_is_clu002_not_clu001():
    found = compare([view("A"), view("B", packages={**MODERN, "torch": "2.13.0+cu126"})])
    assert rules(found) == [("CLU002", "error")]
    assert found[0].message == "torch's CUDA runtime differs across nodes: 12.8 on A; 12.6 on B"
    assert "whl/cu128" in found[0].fix


def test_runtime_read_live_wins_and_nccl_is_compared():
    found = compare(
        [
            view("A", {"torch_cuda": "12.8", "nccl": "2.27.3"}),
            view("B", {"torch_cuda": "12.8", "nccl": "2.21.5"}),
        ]
    )
    assert rules(found) == [("CLU002", "error")] and "NCCL" in found[0].message


def test_driver_differences_are_warnings():
    a, b = view("A"), view("B", driver_cuda="12.6")
    b.facts.driver.version = "560.35.03"
    assert sorted(rules(compare([a, b]))) == [("CLU002", "warning"), ("CLU002", "warning")]


def test_gpu_model_differs_but_a_count_alone_does_not():
    assert compare([view("A", n_gpus=8), view("B", n_gpus=4)]) == []
    found = compare([view("A"), view("B", model=A100_40)])
    assert rules(found) == [("CLU003", "warning")]
    assert "(cc 9.0)" in found[0].message and "(cc 8.0)" in found[0].message
    none = compare([view("A"), view("B", n_gpus=0)])
    assert rules(none) == [("CLU003", "warning")] and "no GPU on B" in none[0].message


@pytest.mark.parametrize(
    "env_a, env_b, fires",
    [
        ({"NCCL_IB_DISABLE": "1"}, {}, True),
        ({"NCCL_SOCKET_IFNAME": "eth0"}, {"NCCL_SOCKET_IFNAME": "ib0"}, True),
        ({"GLOO_SOCKET_IFNAME": "eth0"}, {"GLOO_SOCKET_IFNAME": "eth1"}, True),
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, {}, True),
        ({"NCCL_DEBUG": "INFO"}, {}, False),  # logging
        ({"RANK": "0", "GROUP_RANK": "0"}, {"RANK": "1", "GROUP_RANK": "1"}, False),  # per node
        ({"CUDA_VISIBLE_DEVICES": "0,1"}, {"CUDA_VISIBLE_DEVICES": "2,3"}, False),
        ({"NCCL_IB_KEY": "x"}, {"NCCL_IB_KEY": "y"}, False),  # secret-looking: masked, not compared
    ],
)
def test_env_variables(env_a, env_b, fires):
    found = compare([view("A", env=env_a), view("B", env=env_b)])
    assert rules(found) == ([("CLU004", "warning")] if fires else [])
