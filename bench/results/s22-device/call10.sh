#!/bin/bash
# stop 22, call 10: q4_0 round 11 (x multicast in clusters): the explore twice, the quant and launch tests, the quant part three times
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
start=$(date +%s)
for i in 1 2; do timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 1,2,3,4 2>&1 | tee -a $OUT/explore.log; done
echo "explore done at $(( $(date +%s) - start )) s"
OPGEN_POISON=1 timeout 200 python3 -m pytest tests/gpu -q -p no:cacheprovider -k "quant or qmat or qstorage or launch or programmatic or dynamic_shared" -rfEs > $OUT/quant-tests.log 2>&1
echo "tests rc $? at $(( $(date +%s) - start )) s"; tail -3 $OUT/quant-tests.log; grep -E "^(FAILED|ERROR)" $OUT/quant-tests.log | head
for i in 1 2 3; do timeout 100 python3 bench/gpu.py --parts quant --out /tmp/qp$i > /tmp/qp$i.log 2>&1; echo "quant part $i rc $?"; cp /tmp/qp$i/gpu.json $OUT/quant-part$i.json 2>/dev/null; grep -i "HBM: per product in a graph: share" /tmp/qp$i/gpu.md | head -6; done
echo "all done at $(( $(date +%s) - start )) s"
