CUDA_VISIBLE_DEVICES=6 \
swift rollout \
    --model vl-3b-inst