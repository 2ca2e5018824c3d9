"""A development build of TRL X (``0.15.0.dev0``: TRL's main branch on its way to X, or a fork of
it installed from a git checkout, as alxndrTL/gpu-rl's setup.sh installs andyl98/trl's
grpo-vram-optimization branch) may have any change made on the way to X. Where the batch rule of
the releases before X and X's own differ (0.15 began counting per_device_train_batch_size in
completions, huggingface/trl#2776), CFG002 does not judge the build as the release (it matched no
rule and fell to the newest one: "TRL refuses at init", an error on a run that trained): it says
which rule gives what, at info, whatever the build's origin (PEP 610 ``direct_url.json``: a
fork, a local tree, TRL's own main branch): open-r1's trl @ git main 0.15.0.dev0 of 2025-02-05
trained 7 x 1 against 8 generations (open-r1 PR 171's run died only at create_model_card), that of
2025-02-08 refused 3 x 1 against 8 (open-r1#236). Where both ends agree, the build is judged. Issue 35."""

from __future__ import annotations

from envdoctor.trl_release import dev_build
from tests.conftest import findings, snapshot

STACK = {"trl": "0.15.0.dev0", "vllm": "0.7.0", "torch": "2.5.1", "transformers": "4.49.0"}
#: gpu-rl's train_one_gpu.sh: one process, 4 prompts x 3 generations per device
CONFIG = {"per_device_train_batch_size": 4, "num_generations": 3, "gradient_accumulation_steps": 20}


FORK = "git+https://github.com/andyl98/trl.git@ccc95472f6245f2db00986a08ca16da68bf32c14"


def _cfg002(tmp_path, trl: str, config: dict, origin: str | None = FORK):
    (tmp_path / "train.py").write_text("from trl import GRPOConfig, GRPOTrainer\n")
    launch = f"accelerate launch --num_processes 1 {tmp_path / 'train.py'}"
    stack = STACK | {"trl": {"version": trl, "origin": origin} if origin else trl}
    found = findings(snapshot(1, packages=stack), config=config, launch=launch)
    return [f for f in found if f.rule == "CFG002"]


def test_a_forks_dev_build_between_releases_whose_batch_rules_differ_is_not_judged(tmp_path):
    (f,) = _cfg002(tmp_path, "0.15.0.dev0", CONFIG)
    assert f.severity.value == "info"
    assert "development build of 0.15.0 (installed from " + FORK in f.message and "not judged" in f.message
    assert "no divisibility check under the releases before 0.15.0" in f.message
    assert "not divisible by 3 under TRL 0.15.0's rule" in f.message


def test_a_local_tree_is_a_build_of_its_own_too(tmp_path):
    (f,) = _cfg002(tmp_path, "0.15.0.dev0", CONFIG, origin="file:///home/u/trl_custom")
    assert f.severity.value == "info"


def test_a_build_of_trls_own_main_branch_is_not_judged_either(tmp_path):
    for origin, said in (
        (
            "git+https://github.com/huggingface/trl.git@0123abc",
            "installed from git+https://github.com/huggingface",
        ),
        (None, "TRL's main branch or a fork of it"),
    ):
        (f,) = _cfg002(tmp_path, "0.15.0.dev0", CONFIG, origin=origin)
        assert f.severity.value == "info", origin
        assert said in f.message and "not judged" in f.message


def test_the_release_itself_is_still_refused(tmp_path):
    (f,) = _cfg002(tmp_path, "0.15.0", CONFIG)
    assert f.severity.value == "error" and "TRL refuses at init" in f.message


def test_a_dev_build_whose_ends_agree_is_judged_by_them(tmp_path):
    # 0.16.0.dev0: 0.15 and 0.16 share the rule (per_device x processes): 4 x 1 is not divisible by 3
    (f,) = _cfg002(tmp_path, "0.16.0.dev0", CONFIG)
    assert f.severity.value == "error" and "TRL refuses at init" in f.message
    assert _cfg002(tmp_path, "0.16.0.dev0", CONFIG | {"num_generations": 2}) == []


def test_a_dev_build_fine_under_both_rules_says_nothing(tmp_path):
    assert _cfg002(tmp_path, "0.15.0.dev0", CONFIG | {"num_generations": 2}) == []


def test_dev_build_span():
    assert dev_build("0.15.0.dev0") == ("0.14.9999", "0.15.0")
    assert dev_build("1.0.0.dev0") == ("0.9999.9999", "1.0.0")
    assert dev_build("0.19.1.dev0") == ("0.19.0", "0.19.1")
    assert dev_build("0.15.0") is None and dev_build("garbage") is None
