#!/bin/bash
# session 19, device call 1: the tests changed since the last GPU run, then two explores
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s19/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
OPGEN_POISON=1 timeout 90 python3 -m pytest tests/gpu -q -p no:cacheprovider -rfEs -k "rand or test_quant_gpu" > $OUT/tests.log 2>&1
echo "tests rc $? at $(( $(date +%s) - start )) s"; tail -3 $OUT/tests.log; grep -E "^(FAILED|ERROR)" $OUT/tests.log | head
OPGEN_EXPLORE_COLUMNS="default,reduce_chunks bounded for 256 threads,reduce_chunks bounded for 3 blocks of 256 and 6 slices" \
  timeout 110 python3 bench/gpu.py --parts column-explore --out /tmp/ce > $OUT/column.log 2>&1
echo "column-explore rc $? at $(( $(date +%s) - start )) s"
cp /tmp/ce/gpu.json $OUT/column-explore.json 2>/dev/null; grep -i "explore columns\|failed" /tmp/ce/gpu.md 2>/dev/null | head -40
timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_k,q6_k > $OUT/kquant.log 2>&1
echo "kquant explore rc $? at $(( $(date +%s) - start )) s"
tail -70 $OUT/kquant.log
