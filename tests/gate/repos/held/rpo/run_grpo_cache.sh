cd src
ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero2.yaml \
    --num_processes=7 open_r1/grpo_cache.py \
    --config recipes/poer_7b.yaml
