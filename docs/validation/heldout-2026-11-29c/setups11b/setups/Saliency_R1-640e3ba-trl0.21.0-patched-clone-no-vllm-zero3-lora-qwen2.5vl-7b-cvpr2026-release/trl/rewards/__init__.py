# Copyright 2020-2025 The HuggingFace Team. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


import sys
from typing import TYPE_CHECKING

from ..import_utils import _LazyModule


_import_structure = {
    "format_rewards": ["think_format_reward"],
    "saliency_rewards": ["think_saliency_reward"],
    "openai_rewards": ["openai_reward"],
    "answer_format_rewards": ["answer_format_reward"]
}


if TYPE_CHECKING:
    from .format_rewards import think_format_reward
    from .saliency_rewards import think_saliency_reward
    from .openai_rewards import openai_reward
    from .answer_format_rewards import answer_format_reward

else:
    sys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure, module_spec=__spec__)
