#!/bin/bash

export HF_HOME=./hf_home
export TRANSFORMERS_CACHE=./hf_home
