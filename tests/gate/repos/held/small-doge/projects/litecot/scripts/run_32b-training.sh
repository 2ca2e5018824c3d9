accelerate launch \
    --config_file /data/zhangjiayi/long2short/zero3_offload.yaml \
    sft.py \
    --config /data/zhangjiayi/long2short/config32b-qwen2.5.yaml \
    2>&1 | tee training_32b_qwen2.5_log.txt
