install_requires = [
    "torch"
]
setup(
    install_requires=install_requires,
    python_requires=">=3.10.9",
)