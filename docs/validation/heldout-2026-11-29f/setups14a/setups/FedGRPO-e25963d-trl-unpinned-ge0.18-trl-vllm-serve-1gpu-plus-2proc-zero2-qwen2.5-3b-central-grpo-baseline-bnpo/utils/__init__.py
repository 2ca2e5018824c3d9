from .import_utils import is_e2b_available
from .model_utils import get_tokenizer


__all__ = ["get_tokenizer", "is_e2b_available"]
