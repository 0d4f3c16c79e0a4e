#!/bin/bash
# precision: GPU tests of the switches and the plan cache, then bench/first_call.py x3 beside torch and main's tree
set -u
export PYTHONUNBUFFERED=1
X=.xfer/precision
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $X/.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$(date +%s)
cd $X/tree
export OPGEN_CACHE_DIR=/tmp/opgen-test-cache
OPGEN_POISON=1 timeout 110 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_precision_gpu.py tests/gpu/test_cudnn_gpu.py tests/gpu/test_switches.py tests/gpu/test_cudnn_paths.py tests/gpu/test_cuda_blas.py tests/gpu/test_gpu_conformance.py -k "precision or cudnn or switch or blas or matmul or conv" > $OUT/tests.log 2>&1
echo "tests rc $? in $(( $(date +%s) - start )) s" | tee -a $OUT/tests.log
grep -E "passed|failed" $OUT/tests.log | tail -2
grep -E "^(FAILED|ERROR)" $OUT/tests.log | head -20
unset OPGEN_CACHE_DIR
left=$(( 465 - ($(date +%s) - start) ))
echo "bench with $left s left"
timeout $left python3 bench/first_call.py --runs 3 --baseline ../../.. --out $OUT > $OUT/bench.log 2>&1
echo "bench rc $? at $(( $(date +%s) - start )) s"
tail -45 $OUT/bench.log
