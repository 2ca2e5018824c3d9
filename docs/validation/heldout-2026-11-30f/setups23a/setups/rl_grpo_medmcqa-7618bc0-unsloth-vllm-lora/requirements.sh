python3 -m pip install transformers==4.55.4 datasets>=2.12.0 safetensors>=0.3.0 accelerate>=0.20.3 bitsandbytes>=0.39.0 trl==0.22.2 vllm>=0.9.2 unsloth>=0.1.0 numpy tqdm huggingface-hub 
