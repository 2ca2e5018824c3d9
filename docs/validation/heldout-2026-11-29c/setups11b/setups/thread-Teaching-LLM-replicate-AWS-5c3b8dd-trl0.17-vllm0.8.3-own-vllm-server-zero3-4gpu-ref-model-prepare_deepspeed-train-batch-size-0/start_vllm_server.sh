#!/usr/bin/env bash
python vllm_server.py "$@"
