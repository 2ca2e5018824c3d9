from setuptools import setup, find_packages

setup(
    name="rlvr_experiments",
    version="0.1",
    packages=find_packages(),
)
