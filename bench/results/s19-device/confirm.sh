#!/bin/bash
# session 19, the K path at 5 blocks/SM (bulk + early): tests, three quant benches, the A/B explore
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s19/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
OPGEN_POISON=1 timeout 100 python3 -m pytest tests/gpu -q -p no:cacheprovider -rfEs -k "quant or qmat or qstorage" > $OUT/tests.log 2>&1
echo "tests rc $? at $(( $(date +%s) - start )) s"; tail -2 $OUT/tests.log; grep -E "^(FAILED|ERROR)" $OUT/tests.log | head
for i in 1 2 3; do
  timeout 60 python3 bench/gpu.py --parts quant --out /tmp/q$i > /tmp/q$i.log 2>&1; echo "quant run $i rc $? at $(( $(date +%s) - start )) s"
  cp /tmp/q$i/gpu.json $OUT/quant-run$i.json 2>/dev/null
  grep -E "share of copy|registers" /tmp/q$i/gpu.md | grep -E "q4_k|q6_k|q4_0|q4_1|q8_0" | grep -E "HBM: per product in a graph: share|registers" | cut -c1-160
done
timeout 60 python3 bench/gpu_quant.py --explore-only --formats q4_k,q6_k > $OUT/kquant.log 2>&1; echo "explore rc $? at $(( $(date +%s) - start )) s"
grep "explore qmatvec" $OUT/kquant.log | sed 's/ | / /g' | cut -c1-230
