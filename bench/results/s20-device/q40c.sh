#!/bin/bash
# session 20, device call 4: q4_0, the first stages alone before the wait at 3 blocks/SM (explore, twice)
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
short() { grep "explore qmatvec" "$1" | sed 's/ | / /g; s/per product in a graph: //; s/, error vs first/ err/' | cut -c1-230; }
for r in 1 2; do
  timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 25,26,27,28,29 > $OUT/q40c_$r.log 2>&1
  echo "explore $r rc $? at $(( $(date +%s) - start )) s"; short $OUT/q40c_$r.log
done
