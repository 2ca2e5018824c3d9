# ruff: noqa: E501
"""Two refusals whose message is the cause: Unsloth's standby mode under expandable segments (its
own wording of vLLM's CuMem pool check) and an operation torch's deterministic mode refuses."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes

STANDBY = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/unsloth_zoo/vllm_utils.py", line 1812, in load_vllm
    llm = LLM(**engine_args)
AssertionError: Standby mode is not supported with expandable segments.
Please set environment variable PYTORCH_CUDA_ALLOC_CONF without `expandable_segments:True`.
"""

DETERMINISTIC = """\
  File "/venv/lib/python3.12/site-packages/transformers/integrations/moe.py", line 369, in forward
    counts = torch.histc(ids, bins=self.num_experts, min=0, max=self.num_experts - 1)
RuntimeError: _histc_cuda does not have a deterministic implementation, but you set 'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, or you can use the 'warn_only=True' option, if that's acceptable for your application.
"""

WARN_ONLY = """\
/venv/lib/python3.12/site-packages/torch/autograd/graph.py:825: UserWarning: cumsum_cuda_kernel does not have a deterministic implementation, but you set 'torch.use_deterministic_algorithms(True, warn_only=True)'. You can file an issue at https://github.com/pytorch/pytorch/issues to help us prioritize adding deterministic support for this operation.
{'loss': 0.0123, 'grad_norm': 0.41, 'learning_rate': 1e-06, 'reward': 0.52, 'epoch': 0.01}
{'loss': 0.0119, 'grad_norm': 0.39, 'learning_rate': 1e-06, 'reward': 0.55, 'epoch': 0.02}
"""


def _said(text: str) -> list:
    return [(f.rule, f.severity, f.fix) for f in findings(scan_bytes(text))]


def test_unsloth_standby_under_expandable_segments_names_the_setting_to_drop():
    ((rule, severity, fix),) = _said(STANDBY)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "drop expandable_segments:True" in fix and "UNSLOTH_VLLM_STANDBY" in fix


def test_a_pytest_style_pasted_line_of_torchs_deterministic_refusal_names_full_determinism():
    pasted = "E       " + DETERMINISTIC.splitlines()[-1] + "\n"
    for text in (DETERMINISTIC, pasted):
        ((rule, severity, fix),) = _said(text)
        assert (rule, severity) == ("TRI011", Severity.ERROR)
        assert "full_determinism: false" in fix and "warn_only=True" in fix


def test_the_warn_only_form_in_a_run_that_trains_is_no_finding():
    assert [r for r in _said(WARN_ONLY) if r[1] is not Severity.INFO] == []


CUBLAS = """\
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: Deterministic behavior was enabled with either `torch.use_deterministic_algorithms(True)` or `at::Context::setDeterministicAlgorithms(true)`, but this operation is not deterministic because it uses CuBLAS and you have CUDA >= 10.2. To enable deterministic behavior in this case, you must set an environment variable before running your PyTorch application: CUBLAS_WORKSPACE_CONFIG=:4096:8 or CUBLAS_WORKSPACE_CONFIG=:16:8.
"""


def test_deterministic_mode_without_a_cublas_workspace_names_the_variable():
    """torch's CuBLAS wording of the deterministic refusal (the review's reach case,
    Lightning-AI/pytorch-lightning#9121's message): a fix of its own, the environment variable."""
    ((rule, severity, fix),) = _said(CUBLAS)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert fix.startswith("export CUBLAS_WORKSPACE_CONFIG=:4096:8")
