#!/bin/bash
# GPU tests in two halves (each under the device's 10-minute limit): `new` = the conformance
# suite and the files the language/speed work of stop 19 touched; `rest` = everything else.
set -u
part=${1:-new}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | grep -v "already exists" | tail -1
export PYTHONPATH=$PWD:/tmp/site
NEW="test/python/conformance test/python/codegen/test_gpu_reductions.py test/python/analysis
     test/python/formats/test_nv12.py test/python/ops/test_gpu_sparse_mm.py test/python/codegen/test_gpu_pointer_tensors.py"
if [ "$part" = new ]; then files=$NEW; else
  files=$(ls test/python/*/test_*.py | grep -v -e conformance/ -e test_gpu_reductions -e analysis/ -e test_nv12 \
          -e ops/test_gpu_sparse_mm.py -e test_gpu_pointer_tensors); fi
timeout 570 python3 -m pytest -q -rfE -m gpu -n 14 -p no:cacheprovider -p no:benchmark $files 2>&1 \
  | tail -80 | tee $OUT/gpu_$part.txt | grep -E "^(FAILED|ERROR)|passed|failed" | tail -40
