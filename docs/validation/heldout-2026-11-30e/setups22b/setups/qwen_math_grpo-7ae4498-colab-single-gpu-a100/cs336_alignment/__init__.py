"""
CS336 Alignment - GRPO Training for Math Reasoning Models.

This package provides utilities for training language models using
Group Relative Policy Optimization (GRPO) on the MATH dataset.
"""
