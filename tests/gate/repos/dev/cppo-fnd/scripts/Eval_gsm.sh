accelerate launch  --config_file recipes/accelerate_configs/zero3.yaml \
    --num_processes=1  src/open_r1/eval_gsm.py \
    --config recipes/gsm8k/eval.yaml \