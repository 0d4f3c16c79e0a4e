#!/bin/bash
# session 21, device call A: three full bench/gpu.py runs on the tree after the dim0e merge
# (the column tiles' own entry point, reduce plans) and the bandwidth part's copy in turn
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s21/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$(date +%s)
for i in 1 2 3; do
  left=$(( ${TOTAL_S:-570} - ($(date +%s) - start) ))
  [ $left -lt 40 ] && { echo "no time for bench run $i"; break; }
  timeout $left python3 bench/gpu.py --out /tmp/b$i > /tmp/bench$i.log 2>&1; echo "bench run $i rc $? at $(( $(date +%s) - start )) s"
  cp /tmp/b$i/gpu.json $OUT/gpu-run$i.json 2>/dev/null
  grep -i "failed\|Traceback" /tmp/bench$i.log | head -5
done
cp /tmp/b1/gpu.png $OUT/gpu.png 2>/dev/null
cat /tmp/bench*.log > $OUT/bench.log
