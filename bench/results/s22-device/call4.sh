#!/bin/bash
# stop 22, call 4: where a q4_0 product's time goes (trace.py), three ways of tracing
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
for m in none ends all; do
  python3 .devtree/s22/trace.py 16 $OUT/trace-hbm-$m.npy $m 2>&1 | tee -a $OUT/trace.log
done
python3 .devtree/s22/trace.py 1 $OUT/trace-l2-ends.npy ends 2>&1 | tee -a $OUT/trace.log
