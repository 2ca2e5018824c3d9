python run.py \
    --config_path config/open_r1_example.toml \
    --output_dir outputs/grpo-lora-qwen3-0.6b