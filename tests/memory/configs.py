"""config.json values of real models (the keys that size them), and their published parameter
counts (the model cards / safetensors metadata on the Hugging Face Hub)."""

QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
    "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
    "max_position_embeddings": 32768, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "hidden_act": "silu",
}
QWEN25_15B = {**QWEN25_05B, "hidden_size": 1536, "intermediate_size": 8960,
              "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2}
DEEPSEEK_R1_DISTILL_QWEN_15B = {**QWEN25_15B, "tie_word_embeddings": False}
QWEN25_7B = {**QWEN25_05B, "hidden_size": 3584, "intermediate_size": 18944,
             "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
             "vocab_size": 152064, "tie_word_embeddings": False}
QWEN3_06B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "attention_bias": False,
    "tie_word_embeddings": True, "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "decoder_sparse_step": 1, "num_hidden_layers": 48,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "vocab_size": 151936, "attention_bias": False, "tie_word_embeddings": False,
    "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
}
LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
    "attention_bias": False, "mlp_bias": False, "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
MISTRAL_7B_V01 = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": False,
    "max_position_embeddings": 32768, "torch_dtype": "bfloat16",
}
GEMMA2_2B = {
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
    "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
    "max_position_embeddings": 8192, "torch_dtype": "float32",
}
PHI3_MINI_4K = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
    "intermediate_size": 8192, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "vocab_size": 32064, "tie_word_embeddings": False,
    "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
}

#: name -> (config, total parameters as published)
KNOWN = {
    "Qwen/Qwen2.5-0.5B": (QWEN25_05B, 494_032_768),
    "Qwen/Qwen2.5-1.5B": (QWEN25_15B, 1_543_714_304),
    "Qwen/Qwen2.5-7B": (QWEN25_7B, 7_615_616_512),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": (DEEPSEEK_R1_DISTILL_QWEN_15B, 1_777_088_000),
    "Qwen/Qwen3-0.6B": (QWEN3_06B, 596_049_920),
    "Qwen/Qwen3-30B-A3B": (QWEN3_30B_A3B, 30_532_122_624),
    "meta-llama/Meta-Llama-3-8B": (LLAMA3_8B, 8_030_261_248),
    "mistralai/Mistral-7B-v0.1": (MISTRAL_7B_V01, 7_241_732_096),
    "google/gemma-2-2b": (GEMMA2_2B, 2_614_341_888),
    "microsoft/Phi-3-mini-4k-instruct": (PHI3_MINI_4K, 3_821_079_552),
}

QWEN25_72B = {**QWEN25_05B, "hidden_size": 8192, "intermediate_size": 29568,
              "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
              "vocab_size": 152064, "tie_word_embeddings": False, "max_position_embeddings": 32768}
QWEN25_32B = {**QWEN25_05B, "hidden_size": 5120, "intermediate_size": 27648,
              "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8,
              "vocab_size": 152064, "tie_word_embeddings": False}
#: Qwen2.5-VL-7B-Instruct (transformers 4.x layout: the decoder's keys at the top, the tower in
#: vision_config); 8.29 B parameters, of which the vision tower and merger 0.68 B.
QWEN25_VL_7B = {
    **QWEN25_7B, "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
    "max_position_embeddings": 128000,
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280,
                      "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
                      "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                      "temporal_patch_size": 2, "window_size": 112},
}
#: Gemma 3 4B (text_config + a SigLIP vision_config): 4.30 B parameters, the tower 0.42 B.
GEMMA3_4B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                    "num_hidden_layers": 34, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "vocab_size": 262208, "max_position_embeddings": 131072},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                      "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
                      "patch_size": 14, "image_size": 896, "hidden_act": "gelu_pytorch_tanh"},
    "torch_dtype": "bfloat16",
}
