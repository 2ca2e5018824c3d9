_deps = [
    "accelerate==1.4.0",
    "deepspeed==0.16.8",
    "torch==2.6.0",
    "transformers==4.52.3",
    "trl[vllm]==0.18.0",
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