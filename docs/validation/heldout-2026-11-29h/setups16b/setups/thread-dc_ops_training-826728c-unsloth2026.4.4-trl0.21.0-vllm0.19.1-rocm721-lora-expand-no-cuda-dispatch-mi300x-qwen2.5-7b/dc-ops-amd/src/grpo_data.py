# Copyright (c) 2026
# SPDX-License-Identifier: BSD-3-Clause
"""
GRPO prompt-dataset builder.

For GRPO we need a dataset of *prompts* (not full trajectories). Each prompt
is a dashboard observation — either:
    (a) an initial reset state, or
    (b) a mid-episode state produced by running a short warmup action list.

Each record carries `scenario_id`, `seed`, and `warmup_actions`. The reward
function uses these to re-create the *exact* env state the model saw before
scoring the model's response.
"""

from __future__ import annotations

import random
from typing import Any

from datasets import Dataset

from .constants import SCENARIO_WARMUP_ACTIONS, SCENARIOS
from .prompts import messages_to_prompt, user_content_from_obs


def build_grpo_prompts(
    tokenizer,
    system_prompt: str,
    *,
    num_initial: int = 60,
    num_midgame: int = 20,
    seed: int = 42,
) -> Dataset:
    """Build the GRPO prompt dataset.

    Produces ~ (num_initial + num_midgame) × 6 scenarios = ~480 prompts
    at default settings. Records carry `scenario_id`, `seed`, and
    `warmup_actions` for reward-time replay.
    """
    # Lazy-import the env so this module stays import-safe for format-only tests
    from dc_ops_env.server.dc_ops_env_environment import DcOpsEnvironment
    from dc_ops_env.models import DcOpsAction

    rng = random.Random(seed)
    prompts: list[dict[str, Any]] = []
    env = DcOpsEnvironment()

    for scenario_id in SCENARIOS:
        # ---- (a) Initial-state prompts ----
        for i in range(num_initial):
            s = 1000 + i * 7
            try:
                obs = env.reset(scenario=scenario_id, seed=s)
                prompts.append({
                    "prompt": messages_to_prompt(
                        tokenizer, system_prompt, user_content_from_obs(obs)
                    ),
                    "scenario_id":    scenario_id,
                    "seed":           s,
                    "warmup_actions": [],
                })
            except Exception as e:
                print(f"  [warn] initial prompt failed for {scenario_id} seed={s}: {e}")

        # ---- (b) Mid-game prompts (warmup pre-rolled) ----
        warmups = SCENARIO_WARMUP_ACTIONS.get(scenario_id, [[]])
        for j in range(num_midgame):
            s = 5000 + j * 13
            warmup = warmups[j % len(warmups)]
            try:
                obs = env.reset(scenario=scenario_id, seed=s)
                aborted = False
                for cmd in warmup:
                    obs = env.step(DcOpsAction(command=cmd))
                    if obs.done:
                        aborted = True
                        break
                if aborted:
                    continue

                prompts.append({
                    "prompt": messages_to_prompt(
                        tokenizer, system_prompt, user_content_from_obs(obs)
                    ),
                    "scenario_id":    scenario_id,
                    "seed":           s,
                    "warmup_actions": list(warmup),
                })
            except Exception as e:
                print(f"  [warn] midgame prompt failed for {scenario_id} seed={s}: {e}")

    rng.shuffle(prompts)
    return Dataset.from_list(prompts)
