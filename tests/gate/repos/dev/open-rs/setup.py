_deps = [
    "accelerate==1.4.0",
    "deepspeed==0.15.4",
    "torch==2.5.1",
    "transformers==4.49.0",
    "trl @ git+https://github.com/huggingface/trl.git@69ad852e5654a77f1695eb4c608906fe0c7e8624",
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