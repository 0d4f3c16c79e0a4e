#!/bin/bash
# stop 22, call 11 (the final tree: stop 21's GPU code, the grid test): the GPU suite, q4_0's x cache paths, three bench/gpu.py runs
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$(date +%s)
OPGEN_POISON=1 timeout 280 python3 -m pytest tests/gpu -q -p no:cacheprovider --ignore=tests/gpu/test_kernels_compile.py -rfEs > $OUT/suite.log 2>&1
echo "suite rc $? in $(( $(date +%s) - start )) s" | tee -a $OUT/suite.log
grep -E "passed|failed" $OUT/suite.log | tail -2
grep -E "^(FAILED|ERROR)" $OUT/suite.log | head -30
timeout 100 python3 .devtree/s22/xhints.py 2>&1 | tee $OUT/xhints.log
for i in 1 2 3; do
  left=$(( 585 - ($(date +%s) - start) ))
  [ $left -lt 45 ] && { echo "no time for bench run $i"; break; }
  timeout $left python3 bench/gpu.py --out /tmp/b$i > /tmp/bench$i.log 2>&1; echo "bench run $i rc $? at $(( $(date +%s) - start )) s"
  cp /tmp/b$i/gpu.json $OUT/gpu-run$i.json 2>/dev/null
  grep -i "failed\|Traceback" /tmp/bench$i.log | head -5
done
cp /tmp/b1/gpu.png $OUT/gpu.png 2>/dev/null; cp /tmp/b1/gpu.md $OUT/gpu.md 2>/dev/null
cat /tmp/bench*.log > $OUT/bench.log 2>/dev/null
