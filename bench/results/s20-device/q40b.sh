#!/bin/bash
# session 20, device call 2: q4_0 with a weight block per thread, 8-row items (explore, twice);
# bench/gpu.py's quant part with the profiler's durations moved to the last part
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
short() { grep "explore qmatvec" "$1" | sed 's/ | / /g; s/per product in a graph: //; s/, error vs first/ err/' | cut -c1-230; }
for r in 1 2; do
  timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 8,15,16,17,18,19 > $OUT/q40b_$r.log 2>&1
  echo "explore $r rc $? at $(( $(date +%s) - start )) s"; short $OUT/q40b_$r.log
done
timeout 120 python3 bench/gpu.py --parts quant,quant-durations --out /tmp/q > $OUT/quant.log 2>&1
echo "gpu.py quant rc $? at $(( $(date +%s) - start )) s"; cp /tmp/q/gpu.json $OUT/quant.json
grep -i "share of copy\|failed" /tmp/q/gpu.md | cut -c1-200
