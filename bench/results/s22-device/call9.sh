#!/bin/bash
# stop 22, call 9: q4_0 round 10 (interleaved words): the explore three times, the quant tests
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
start=$(date +%s)
for i in 1 2 3; do timeout 120 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 1 2>&1 | tee -a $OUT/explore.log; done
OPGEN_POISON=1 timeout 200 python3 -m pytest tests/gpu/test_quant_gpu.py -q -p no:cacheprovider -rfEs > $OUT/quant-tests.log 2>&1
echo "tests rc $? at $(( $(date +%s) - start )) s"; tail -2 $OUT/quant-tests.log; grep -E "^(FAILED|ERROR)" $OUT/quant-tests.log | head
