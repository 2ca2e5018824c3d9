"""Issue 35's wrong answers, each through the command line as a user meets it (the rest are
tests/checks/test_resolver.py, tests/test_fix.py, tests/test_knowledge.py,
tests/checks/test_known_failures.py, tests/checks/test_script_keys.py)."""

from __future__ import annotations

import json

from tests.conftest import run_cli

PAST = ["--assume", "trl==1.17.0", "--assume", "vllm==0.34.0", "--assume", "torch==2.15.0"]
PAST += ["--assume", "transformers==5.25.0"]


def _found(proc) -> list[dict]:
    return json.loads(proc.stdout)["findings"]


def test_releases_past_the_knowledge_are_said_not_all_green(tmp_path):
    """--assume trl==1.17.0 vllm==0.34.0 torch==2.15.0 transformers==5.25.0 was all green, exit
    0, and LAY003 stated "TRL 1.17.0 refuses …" about a release envdoctor has never seen."""
    proc = run_cli(
        "check", *PAST, "--no-network", "--format", "json", "--", "python", "train.py", cwd=tmp_path
    )
    found = _found(proc)
    past = {f["message"].split(" is newer")[0] for f in found if f["rule"] == "PKG009"}
    assert past == {"TRL 1.17.0", "vLLM 0.34.0", "transformers 5.25.0"}, past  # torch 2.15.0 is known
    assert all(f["severity"] == "warning" for f in found if f["rule"] == "PKG009")
    assert not any("TRL 1.17.0 refuses" in f["message"] for f in found)


def test_trl_0_19_0_colocate_without_generation_kwargs_is_an_error(tmp_path):
    """TRL 0.19.0 colocate with generation_kwargs unset crashes on every run (trl#3633): it was a
    warning with exit 0."""
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("use_vllm: true\nvllm_mode: colocate\n")
    proc = run_cli(
        "check", "--assume", "trl==0.19.0", "--assume", "transformers==4.53.2", "--config", str(cfg),
        "--no-network", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    hits = [
        f for f in _found(proc) if f["evidence"].get("id") == "trl-0.19.0-colocate-generation-kwargs-none"
    ]
    assert [f["severity"] for f in hits] == ["error"] and proc.returncode == 1
