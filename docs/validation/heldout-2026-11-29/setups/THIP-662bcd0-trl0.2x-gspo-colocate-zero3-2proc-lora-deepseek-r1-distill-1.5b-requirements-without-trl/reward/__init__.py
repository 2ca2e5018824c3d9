from .reward_func import (
	process_reward_func,
	answer_reward_func,
	answer_similarity_score,
	accuracy_reward,
)

from .makeeventlog import Answer2EventAgent