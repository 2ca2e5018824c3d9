_deps = [
    "accelerate==1.4.0",
    "deepspeed==0.16.4",
    "torch==2.6.0",
    "transformers==4.51.2",
    "trl @ git+https://github.com/huggingface/trl.git@c04e84c4545acfaecdf7e0631ad07a86ab0fb2f6",  # Fix EOS token for SFT on base models: https://github.com/huggingface/trl/pull/3299
]
extras = {}
extras["torch"] = deps_list("torch")
install_requires = [
    deps["accelerate"],
    deps["deepspeed"],
    deps["transformers"],
    deps["trl"],
]

setup(
    extras_require=extras,
    python_requires=">=3.10.9",
    install_requires=install_requires,
)
