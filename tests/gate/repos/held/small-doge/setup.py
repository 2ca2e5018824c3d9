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
    entry_points={
        "console_scripts": [
            "small-doge-webui=small_doge.webui:launch_webui",
        ],
    },
    classifiers=[
        "Intended Audience :: Developers",
        "Intended Audience :: Education",
        "Intended Audience :: Science/Research",
        "License :: OSI Approved :: Apache Software License",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.9",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
    keywords=["small-doge", "doge", "small language models", "pytorch", "transformers", "trl", "r1", "sft", "dpo", "webui", "gradio", "fastapi"],
)
