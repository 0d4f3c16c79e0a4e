#!/usr/bin/env bash
# Branch dim0c's one device call (bench/results/dim0c-h100.md): run from the tree's root
# on the device machine, HEAD's hip/reduce.hip at $1 (the "before" variant), results to $OUT.
#   kernels precompiled; column-explore (variants side by side, 3 rounds, torch beside);
#   ncu --set full on ours (pass 4 and pass 3) and torch's (bench/dim0_ncu.py); three fresh
#   processes of `bench/gpu.py --parts sum-dim0`; the reduce tests under OPGEN_POISON=1.
set -u
export PYTHONUNBUFFERED=1 OPGEN_REDUCE_BEFORE="$1"
LOG=$OUT/dim0c-h100.log
step() { echo "== step $1 $(date +%T)" >>"$LOG"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory --format=csv >>"$LOG" 2>&1
step "precompile"
timeout 60 python3 -m bench.precompile --column-explore --jobs 15 >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
step "column-explore"
timeout 50 python3 bench/gpu.py --parts column-explore --out /tmp/explore >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
cp /tmp/explore/gpu.json "$OUT/column-explore3-h100.json" 2>/dev/null
step "ncu"
timeout 70 ncu --set full --clock-control none -k 'regex:reduce_chunks_f32|reduce_kernel' -c 6 \
  -o /tmp/dim0 -f python3 -m bench.dim0_ncu >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
ncu --import /tmp/dim0.ncu-rep --page details >"$OUT/dim0c-ncu-details.txt" 2>&1
ncu --import /tmp/dim0.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__waves_per_multiprocessor,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,sm__cycles_active.avg,gpc__cycles_elapsed.max,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed >"$OUT/dim0c-ncu-raw.csv" 2>&1
cp /tmp/dim0.ncu-rep "$OUT/dim0c-h100.ncu-rep" 2>/dev/null
for r in 1 2 3; do
  step "sum-dim0 run $r"
  timeout 20 python3 bench/gpu.py --parts sum-dim0 --out /tmp/run$r >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
  cp /tmp/run$r/gpu.json "$OUT/dim0c-h100-run$r.json" 2>/dev/null
done
step "reduce tests"
OPGEN_POISON=1 timeout 70 python3 -m pytest tests/gpu -q -p no:cacheprovider -p no:randomly \
  --ignore=tests/gpu/test_kernels_compile.py -k "reduce or sum or column" >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
step "end"
