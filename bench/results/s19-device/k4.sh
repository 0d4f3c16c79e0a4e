#!/bin/bash
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s19/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
for r in 1 2; do
timeout 80 python3 bench/gpu_quant.py --explore-only --formats q4_k,q6_k > $OUT/kquant$r.log 2>&1; echo "explore $r rc $?"
grep "explore qmatvec" $OUT/kquant$r.log | sed 's/ | / /g' | sed 's/per product in a graph: //; s/, error vs first/ err/' | cut -c1-200
done
