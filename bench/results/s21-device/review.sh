#!/bin/bash
# session 21, device call C (after the review's refactor of reduce_op and hip/reduce.hip's row
# loops): the reduce tests, then the sum over dim 0 three times in separate processes
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s21/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OPGEN_POISON=1 timeout 300 python3 -m pytest tests/gpu -q -p no:cacheprovider --ignore=tests/gpu/test_kernels_compile.py -rfEs -k "reduce or sum or column or tile or min or max or arg" > $OUT/reduce-tests.log 2>&1
echo "reduce tests rc $?"; tail -1 $OUT/reduce-tests.log; grep -E "^(FAILED|ERROR)" $OUT/reduce-tests.log | head
for i in 1 2 3; do
  timeout 120 python3 bench/gpu.py --parts sum-dim0 --out /tmp/d$i > /tmp/d$i.log 2>&1; echo "sum-dim0 run $i rc $?"
  cp /tmp/d$i/gpu.json $OUT/gpu-dim0-review-run$i.json 2>/dev/null
done
