#!/usr/bin/env bash
# Profiles one fp16 matmul by tilec and by Triton (scripts/profile_matmul.py:
# CONFIG=BM,BN,BK,warps,stages, M, N, K, B_KMAJOR=1). Logs in $OUT.
exec bash "$(dirname "$0")/profile.sh" "$(dirname "$0")/profile_matmul.py" matmul_kernel
