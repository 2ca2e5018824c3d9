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
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Developers",
        "Intended Audience :: Education",
        "Intended Audience :: Science/Research",
        "License :: OSI Approved :: Apache Software License",
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.10",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
