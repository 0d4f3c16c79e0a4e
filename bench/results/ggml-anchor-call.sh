#!/bin/bash
# The one device call of the ggml anchor (bench/ggml.py), run from the tree's root with the ggml
# source at $GGML: ggml's test-backend-ops builds in the background while opgen's quantized GPU
# tests run, then opgen's timings and ggml's, side by side, into $OUT.
OUT=${OUT:-/tmp/out}
GGML=${GGML:-../ggml-src}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$OUT/device.log"
(cmake --version | head -1; nvcc --version | tail -1; nproc) 2>&1 | tee -a "$OUT/device.log"
python3 bench/ggml.py --ggml "$GGML" --build-only --jobs 14 --out "$OUT" &
BUILD=$!
echo "== tests $(date -u +%T)" | tee "$OUT/tests.log"
timeout 200 python3 -m pytest tests/gpu/test_quant_gpu.py -q -x -p no:cacheprovider 2>&1 | tail -30 | tee -a "$OUT/tests.log"
echo "== tests rc=${PIPESTATUS[0]} $(date -u +%T)" | tee -a "$OUT/tests.log"
timeout 340 python3 bench/ggml.py --ggml "$GGML" --wait-for $BUILD --out "$OUT" --runs 3 --deadline 290 2>&1 | tail -60
echo "== bench rc=${PIPESTATUS[0]} $(date -u +%T)"
