#!/bin/bash
# session 20, last device call: the quant tests on the pruned hip/quantized.hip (machine code
# unchanged), then three bench/gpu.py runs with the issue11 pairs timed in turn
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s20/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$(date +%s)
OPGEN_POISON=1 timeout 150 python3 -m pytest tests/gpu -q -p no:cacheprovider --ignore=tests/gpu/test_kernels_compile.py -rfEs -k "quant or qmat or qstorage" > $OUT/quant-tests.log 2>&1
echo "quant tests rc $? in $(( $(date +%s) - start )) s"; tail -1 $OUT/quant-tests.log; grep -E "^(FAILED|ERROR)" $OUT/quant-tests.log | head
for i in 1 2 3; do
  left=$(( 540 - ($(date +%s) - start) ))
  [ $left -lt 40 ] && { echo "no time for bench run $i"; break; }
  timeout $left python3 bench/gpu.py --out /tmp/b$i > /tmp/bench$i.log 2>&1; echo "bench run $i rc $? at $(( $(date +%s) - start )) s"
  cp /tmp/b$i/gpu.json $OUT/gpu-run$i.json 2>/dev/null
  grep -i "failed\|Traceback" /tmp/bench$i.log | head -5
done
cp /tmp/b1/gpu.png $OUT/gpu.png 2>/dev/null
cat /tmp/bench*.log > $OUT/bench.log
