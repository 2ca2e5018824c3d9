from .vlm_module import VLMBaseModule
from .qwen_module import Qwen2VLModule
from .internvl_module import InvernVLModule
from .glm_module import GLMVModule

__all__ = ["VLMBaseModule", "Qwen2VLModule", "InvernVLModule", "GLMVModule"]