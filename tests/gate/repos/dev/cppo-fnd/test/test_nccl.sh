CUDA_VISIBLE_DEVICES=0,1,2 torchrun \
  --rdzv-backend=c10d \
  --rdzv-endpoint=localhost:0 \
  --nnodes=1 \
  --nproc-per-node=3 \
  test/test_nccl.py 
