"""A key the training script's own ``GRPOConfig(...)`` call sets is fixed where the code sets it:
the keyword taken out of the call (or given the fix's value) as a line edit of the script, proved
by reading the edited script again; a config-file edit alone leaves the code's value running
(SevZero 493b1bc: ``max_prompt_length`` in config.yaml and in ``GRPOConfig(...)``,
heldout-2026-11-28e)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

TRL12 = ["--assume", "trl==1.2.0"]


def _fix(tmp_path: Path, *config: str) -> dict:
    args = [*TRL12, *config, "--format", "json", "--", "python", "train.py"]
    return json.loads(run_cli("fix", *args, cwd=tmp_path).stdout)


def _check(tmp_path: Path, *config: str) -> dict:
    args = [*TRL12, *config, "--format", "json", "--", "python", "train.py"]
    return json.loads(run_cli("check", *args, cwd=tmp_path).stdout)


def _rules(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule and f["severity"] != "info"]


def test_a_key_in_the_config_file_and_the_script_is_removed_from_both(tmp_path):
    (tmp_path / "train.py").write_text(
        "from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o', max_prompt_length=4096)\n"
    )
    (tmp_path / "config.yaml").write_text("max_prompt_length: 4096\nbeta: 0.0\n")
    out = _fix(tmp_path, "--config", "config.yaml")
    assert "CFG001" in out["fixed"] and not _rules(out["after"], "CFG001")
    files = out["changes"]["files"]
    assert files[0]["path"] == "train.py" and "max_prompt_length" in files[0]["old"][0]
    assert "max_prompt_length" not in files[0]["new"][0]
    # the fix was written: a real check of the files agrees with `after`
    assert "max_prompt_length" not in (tmp_path / "train.py").read_text()
    assert "max_prompt_length" not in (tmp_path / "config.yaml").read_text()
    assert not _rules(_check(tmp_path, "--config", "config.yaml"), "CFG001")


def test_a_key_only_the_script_sets_is_taken_out_of_its_call(tmp_path):
    script = (
        "from trl import GRPOConfig\n"
        "cfg = GRPOConfig(\n"
        "    output_dir='o',\n"
        "    max_prompt_length=4096,  # prompts are long\n"
        "    beta=0.0,\n"
        ")\n"
    )
    (tmp_path / "train.py").write_text(script)
    before = _check(tmp_path)
    cfg001 = _rules(before, "CFG001")
    assert cfg001 and "train.py line 4" in cfg001[0]["fix"]  # check prints the script edit too
    out = _fix(tmp_path)
    assert "CFG001" in out["fixed"]
    assert (tmp_path / "train.py").read_text() == script.replace(
        "    max_prompt_length=4096,  # prompts are long\n", ""
    )
    assert not _rules(_check(tmp_path), "CFG001")


def test_a_key_the_code_sets_where_no_line_edit_reaches_is_unfixed_with_why(tmp_path):
    script = "from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o')\ncfg.max_prompt_length = 4096\n"
    (tmp_path / "train.py").write_text(script)
    out = _fix(tmp_path)
    assert _rules(out["before"], "CFG001") and "CFG001" not in out["fixed"]
    why = next(u["why"] for u in out["unfixed"] if u["rule"] == "CFG001")
    assert "cannot edit" in why or "by hand" in why
    assert (tmp_path / "train.py").read_text() == script  # nothing written that does not hold


def test_a_value_the_code_sets_literally_is_changed_in_the_call(tmp_path):
    """CFG002 on a literal ``num_generations`` of the script's call: the value is changed in the
    call (the config file's key would not reach a GRPOConfig built in code)."""
    (tmp_path / "train.py").write_text(
        "from trl import GRPOConfig\n"
        "cfg = GRPOConfig(output_dir='o', per_device_train_batch_size=4, num_generations=3)\n"
    )
    out = _fix(tmp_path)
    assert "CFG002" in out["fixed"], out["unfixed"]
    text = (tmp_path / "train.py").read_text()
    assert "num_generations=3" not in text and not out["changes"]["config"]["set"].get("num_generations")
    assert not _rules(_check(tmp_path), "CFG002")


def test_a_key_taken_off_the_line_is_taken_out_of_the_config_file_under_it(tmp_path):
    """The command line wins over the config file: a fix that drops the flag alone uncovers the
    file's value (ms-swift#3739's `tensor_parallel_size`, heldout-2026-11-28: a real check after
    the fix found it again)."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "config.yaml").write_text("beta: 0.0\nmax_prompt_length: 512\n")
    line = ["python", "train.py", "--max_prompt_length", "256"]
    args = [*TRL12, "--config", "config.yaml", "--format", "json", "--", *line]
    out = json.loads(run_cli("fix", *args, cwd=tmp_path).stdout)
    assert "CFG001" in out["fixed"] and "max_prompt_length" in out["changes"]["config"]["remove"]
    assert "max_prompt_length" not in (tmp_path / "config.yaml").read_text()
    new_line = out["changes"]["launch"][-1]
    assert "max_prompt_length" not in new_line
    again = [*TRL12, "--config", "config.yaml", "--format", "json", "--", *new_line.split()]
    assert not _rules(json.loads(run_cli("check", *again, cwd=tmp_path).stdout), "CFG001")
