#!/bin/bash
# session 20, device call 1: q4_0's new variants (explore, twice), and the bench harness's
# measuring order (stop 19's qmatvec_rows, profiler between the graphs, against the new order)
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
short() { grep "explore qmatvec" "$1" | sed 's/ | / /g; s/per product in a graph: //; s/, error vs first/ err/' | cut -c1-230; }
for r in 1 2; do
  timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 9,10,11,12,13,14 > $OUT/q40_$r.log 2>&1
  echo "explore $r rc $? at $(( $(date +%s) - start )) s"; short $OUT/q40_$r.log; grep -i "error\|failed" $OUT/q40_$r.log | grep -v "err 0\|error vs" | head -5
done
for r in 1 2; do
  for v in gpu_quant_s19 gpu_quant; do
    timeout 60 python3 bench/$v.py --formats q4_0 --no-torch > $OUT/${v}_$r.log 2>&1
    echo "$v $r rc $? at $(( $(date +%s) - start )) s"
    grep "per product in a graph (us)\|kernel duration, profiler (us" $OUT/${v}_$r.log | sed 's/qmatvec q4_0 4096x4096, 1 row, //' | cut -c1-160
  done
done
