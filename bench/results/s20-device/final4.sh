#!/bin/bash
# session 20, device call 8: after the gpuhost merge (the cuda small-op host path): the GPU
# suite, then bench/gpu.py's latency part three times, each a fresh process
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s20/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$(date +%s)
OPGEN_POISON=1 timeout 300 python3 -m pytest tests/gpu -q -p no:cacheprovider --ignore=tests/gpu/test_kernels_compile.py -rfEs > $OUT/suite.log 2>&1
echo "suite rc $? in $(( $(date +%s) - start )) s" | tee -a $OUT/suite.log
grep -E "passed|failed" $OUT/suite.log | tail -2
grep -E "^(FAILED|ERROR)" $OUT/suite.log | head -30
for i in 1 2 3; do
  timeout 60 python3 bench/gpu.py --parts latency --out /tmp/l$i > /tmp/lat$i.log 2>&1; echo "latency run $i rc $?"
  cp /tmp/l$i/gpu.json $OUT/latency-run$i.json 2>/dev/null
  grep "small op" /tmp/l$i/gpu.md | cut -c1-120
done
