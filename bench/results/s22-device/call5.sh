#!/bin/bash
# stop 22, call 5: what x's loads cost q4_0 (xcost.py)
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 .devtree/s22/xcost.py 2>&1 | tee $OUT/xcost.log
