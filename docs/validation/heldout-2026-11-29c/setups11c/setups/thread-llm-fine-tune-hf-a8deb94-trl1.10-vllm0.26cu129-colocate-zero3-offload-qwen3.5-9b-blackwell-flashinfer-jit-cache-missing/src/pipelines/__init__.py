from .pipeline import train, test, test_large, test_vllm, test_vllm_multi_turn

__all__ = [
    "train",
    "test",
    "test_large",
    "test_vllm",
    "test_vllm_multi_turn",
]
