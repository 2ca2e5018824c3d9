# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.
#
# This source code is licensed under the BSD-style license found in the
# LICENSE file in the root directory of this source tree.

"""Hospital triage and scheduling environment."""

from .client import HospitalTriageEnv
from .models import (
    HospitalTriageAction,
    HospitalTriageObservation,
    HospitalTriageState,
    RewardBreakdown,
)

__all__ = [
    "HospitalTriageAction",
    "HospitalTriageObservation",
    "HospitalTriageState",
    "RewardBreakdown",
    "HospitalTriageEnv",
]
