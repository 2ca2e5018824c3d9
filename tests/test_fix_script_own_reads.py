"""A key of the config file the training script loads itself that the script also reads for its
own use (``build_dataset(..., cfg["max_prompt_length"])``) and hands to a GRPOConfig keyword
TRL removed: ``fix`` drops the keyword at the call and leaves the key in the file; removed from the
file, the script's own read stops on a KeyError (dLounce/Text-to-SQL 9b1274c,
src/training/grpo.py:142 and :158, heldout-2026-11-30b setups19b)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

TRL12 = ["--assume", "trl==1.2.0"]
SCRIPT = """import yaml
from trl import GRPOConfig


def keep(rows, n):
    return [r for r in rows if len(r) <= n]


def main():
    with open("config.yaml") as f:
        cfg = yaml.safe_load(f)
{own}    args = GRPOConfig(
        output_dir="o",
        learning_rate=cfg["lr"],
        max_prompt_length=cfg["max_prompt_length"],
        beta=0.0,
    )
    return args


main()
"""
OWN = '    rows = keep([], cfg["max_prompt_length"])\n'
CONFIG = "lr: 1.0e-6\nmax_prompt_length: 4096\n"


def _run(tmp_path: Path, command: str, *extra: str) -> dict:
    args = [*TRL12, "--config", "config.yaml", *extra, "--format", "json", "--", "python", "train.py"]
    return json.loads(run_cli(command, *args, cwd=tmp_path).stdout)


def _loud(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule and f["severity"] != "info"]


def test_a_key_the_script_reads_itself_stays_in_the_file(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT.format(own=OWN))
    (tmp_path / "config.yaml").write_text(CONFIG)
    cfg001 = _loud(_run(tmp_path, "check"), "CFG001")
    assert cfg001 and "train.py:13" in cfg001[0]["message"] and "TypeError" in cfg001[0]["message"]
    assert "keep `max_prompt_length` in config.yaml (train.py:12 reads it itself)" in cfg001[0]["fix"]
    out = _run(tmp_path, "fix")
    assert "CFG001" in out["fixed"] and not _loud(out["after"], "CFG001")
    assert not out["changes"].get("config_remove")
    files = out["changes"]["files"]
    assert [f["path"] for f in files] == ["train.py"] and "max_prompt_length" in files[0]["old"][0]
    # written: the file keeps the key the script reads; the call no longer passes it
    assert "max_prompt_length: 4096" in (tmp_path / "config.yaml").read_text()
    text = (tmp_path / "train.py").read_text()
    assert 'max_prompt_length=cfg["max_prompt_length"]' not in text and OWN in text
    assert not _loud(_run(tmp_path, "check"), "CFG001")


def test_diff_shows_the_call_changed_not_the_file(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT.format(own=OWN))
    (tmp_path / "config.yaml").write_text(CONFIG)
    got = run_cli(
        "fix", *TRL12, "--config", "config.yaml", "--diff", "--", "python", "train.py", cwd=tmp_path
    )
    assert '-        max_prompt_length=cfg["max_prompt_length"],' in got.stdout
    assert "+++ b/config.yaml" not in got.stdout
    assert (tmp_path / "config.yaml").read_text() == CONFIG  # --diff writes nothing


def test_a_key_only_the_call_reads_is_removed_from_both(tmp_path):
    """The script reads the key only for the keyword: the file's key goes with it, as before."""
    (tmp_path / "train.py").write_text(SCRIPT.format(own=""))
    (tmp_path / "config.yaml").write_text(CONFIG)
    out = _run(tmp_path, "fix")
    assert "CFG001" in out["fixed"] and not _loud(out["after"], "CFG001")
    assert "max_prompt_length" not in (tmp_path / "config.yaml").read_text()
    assert "max_prompt_length" not in (tmp_path / "train.py").read_text()


def test_a_field_of_a_namespace_the_script_reads_itself_stays_too(tmp_path):
    """The config read field by field (``cfg.max_prompt_length`` of a namespace built from the
    file)."""
    script = (
        "import yaml\nfrom types import SimpleNamespace\nfrom trl import GRPOConfig\n\n"
        "with open('config.yaml') as f:\n    cfg = SimpleNamespace(**yaml.safe_load(f))\n"
        "{own}args = GRPOConfig(output_dir='o', max_prompt_length=cfg.max_prompt_length,\n"
        "    beta=0.0)\n"
    )
    for own, kept in (("n = cfg.max_prompt_length * 2\n", True), ("", False)):
        (tmp_path / "train.py").write_text(script.format(own=own))
        (tmp_path / "config.yaml").write_text(CONFIG)
        out = _run(tmp_path, "fix")
        assert "CFG001" in out["fixed"] and not _loud(out["after"], "CFG001"), own
        assert ("max_prompt_length" in (tmp_path / "config.yaml").read_text()) is kept, own
