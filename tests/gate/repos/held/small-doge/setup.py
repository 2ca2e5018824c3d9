_deps = [
    "accelerate>=1.2.1",
    "deepspeed==0.15.4",
    "torch>=2.5.1",
]
extras = {}
extras["torch"] = deps_list("torch")
extras["deepspeed"] = deps_list("deepspeed")
install_requires = [
    deps["accelerate"],
    deps["transformers"],
    deps["trl"],
]
setup(
    extras_require=extras,
    install_requires=install_requires,
    python_requires=">=3.10.9",
    keywords=["small-doge", "doge", "small language models", "pytorch", "transformers", "trl", "r1", "sft", "dpo", "webui", "gradio", "fastapi"],
)