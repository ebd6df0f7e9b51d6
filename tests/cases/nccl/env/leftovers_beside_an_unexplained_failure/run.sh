#!/bin/bash
export NCCL_DEBUG=TRACE
export NCCL_MAX_NRINGS=4
torchrun --nproc-per-node=4 train.py --config configs/base.yaml
