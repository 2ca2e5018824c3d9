PROMPTS = {
    "RL_ZERO": (
        "You first think about the reasoning process as an internal monologue and then provide the user with the answer. Respond in the following format: <think>\n...\n</think>\n<answer>\n...\n</answer><|endoftext|>\n\n"
        "Question: {question}"
    )
}