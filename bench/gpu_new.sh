#!/bin/bash
# The GPU tests of the language and speed work of stop 19 (issues 29 and 30), on the device.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=$PWD:/tmp/site
python3 -c "import triton, triton.language as tl; print(triton.__version__); open('$OUT/triton_all.txt','w').write('\n'.join(tl.__all__))"
timeout 560 python3 -m pytest -q -rfE -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  test/python/codegen/test_gpu_reductions.py test/python/conformance/test_shape_ops.py \
  test/python/conformance/test_control_flow.py test/python/conformance/test_language_math.py \
  test/python/conformance/test_language_atomics.py test/python/conformance/test_language_debug.py \
  test/python/conformance/test_gemm_defects.py test/python/conformance/test_attention_sparse_k.py \
  test/python/conformance/test_gpu_parity.py test/python/analysis/test_axis_info.py \
  test/python/formats/test_nv12.py test/python/ops/test_gpu_sparse_mm.py \
  test/python/conformance/test_tutorial_elementwise.py test/python/codegen/test_gpu_pointer_tensors.py \
  2>&1 | tail -60 | tee $OUT/gpu_new.txt
