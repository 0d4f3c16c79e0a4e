#!/usr/bin/env bash
# Branch dim0e's device calls (bench/results/gpu-notes.md, "dim0e"): run from the root of
# this tree on the device machine, HEAD's tree (main before dim0e) at $1, results to $OUT.
#   reduce.hip of both trees precompiled at once; three fresh processes of
#   `bench/gpu.py --parts sum-dim0` for each tree, before and after in turn; the reduce tests
#   under OPGEN_POISON=1; column-explore (default, size_t indices, 2 and 4 blocks a
#   multiprocessor, the info array; 3 rounds, torch beside); the column-tile tests again with
#   size_t indices. $2 (optional): the call's label in the file names (default: none).
set -u
export PYTHONUNBUFFERED=1
BASE="$1"
TAG="${2:-}"
LOG=$OUT/dim0e$TAG-h100.log
START=$SECONDS
step() { echo "== step $1 $(date +%T) (+$((SECONDS - START)) s)" >>"$LOG"; }
left() { [ $((SECONDS - START)) -lt "$1" ]; }  # whether fewer than $1 seconds have gone
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory --format=csv >>"$LOG" 2>&1
step "precompile (both trees' reduce.hip and this tree's column-explore variants)"
(cd "$BASE" && timeout 150 python3 -c "
import runtime.cuda as c
from runtime.gpu.compile import HIP_DIR, KernelCache, cache_key, compile_for
rt, text = c._rt, (HIP_DIR / 'reduce.hip').read_text()
arch = rt.driver.arch(0)
key = cache_key(rt.name, text, arch, rt.driver.compiler_version())
KernelCache('cuda').get_or_compile(key, lambda: compile_for('cuda', text, 'reduce.hip', arch))
print('base reduce.hip compiled')" >/tmp/precompile-base.log 2>&1) &
timeout 150 python3 -m bench.precompile --column-explore --no-sources --jobs 8 >>"$LOG" 2>&1
echo "rc $?" >>"$LOG"
wait
cat /tmp/precompile-base.log >>"$LOG"
for r in 1 2 3; do
  for tree in base dim0e; do
    step "sum-dim0 $tree run $r"
    dir=.
    [ "$tree" = base ] && dir="$BASE"
    (cd "$dir" && timeout 45 python3 bench/gpu.py --parts sum-dim0 --out "/tmp/$tree-run$r" >>"$LOG" 2>&1)
    echo "rc $?" >>"$LOG"
    cp "/tmp/$tree-run$r/gpu.json" "$OUT/gpu-dim0e$TAG-$tree-h100-run$r.json" 2>/dev/null
  done
done
if left 330; then
  step "column-explore"
  OPGEN_EXPLORE_COLUMNS="pass 3 with info,default,size_t indices,4 blocks a multiprocessor (8 slices),2 blocks a multiprocessor (4 slices)" \
    timeout 60 python3 bench/gpu.py --parts column-explore --out /tmp/explore >>"$LOG" 2>&1
  echo "rc $?" >>"$LOG"
  cp /tmp/explore/gpu.json "$OUT/column-explore6$TAG-h100.json" 2>/dev/null
fi
step "reduce tests"
OPGEN_POISON=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:randomly \
  tests/gpu/test_gpu_paths.py tests/gpu/test_gpu_runtime_paths.py tests/gpu/test_gpu_conformance.py \
  -k "reduce or sum or column or plan or leading" >>"$LOG" 2>&1
echo "rc $?" >>"$LOG"
if left 380; then
  step "column-tile tests with size_t indices (OPGEN_COLUMN_INDEX32=0)"
  OPGEN_POISON=1 OPGEN_TEST_REDUCE_DEFINES=OPGEN_COLUMN_INDEX32=0 timeout 60 python3 -m pytest -q \
    -p no:cacheprovider -p no:randomly tests/gpu/test_gpu_paths.py -k "column_tiles" >>"$LOG" 2>&1
  echo "rc $?" >>"$LOG"
fi
step "end"
