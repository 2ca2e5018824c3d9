accelerate launch \
    --config_file /data/zhangjiayi/long2short/zero3.yaml \
    sft.py \
    --config /data/zhangjiayi/long2short/config7b-qwen2.5-math-short25k.yaml \
    2>&1 | tee training_7b_qwen2.5_math_short25k_log.txt
