# The quantized-decode switches (`scale_after_dot`, `narrow_copies`, both on by default) on the
# GPU: their GPU tests, a layer's five GEMMs in one CUDA graph with and without them
# (`decode_graph.py --variant`, same run), and the compiled Llama decode at batch 1 and 16 for
# dense, 4-bit and 8-bit weights, a second run with the switches off in its environment.
# `tests graph` fits one device call (~3 min), `e2e` another (~6 min).
#   bash bench/gpu_decode_ab.sh tests graph      then      bash bench/gpu_decode_ab.sh e2e
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=$PWD:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 SPARSECC_CACHE_DIR=/tmp/scc
OFF="SPARSECC_SCALE_AFTER_DOT=0 SPARSECC_NARROW_COPIES=0"
if [[ " $* " == *" tests "* ]]; then
  timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu test/python/nn/test_quantized_linear.py \
    test/python/nn/test_split_k_linear.py 2>&1 | tail -3
fi
if [[ " $* " == *" graph "* ]]; then
  timeout 200 python3 bench/decode_graph.py --schemes dense,w4g128,w8g128 --m 1,16 \
    --variant "off:${OFF// /+}" 2>&1 | grep -v Warn | tail -12
fi
if [[ " $* " == *" e2e "* ]]; then
  for env in "" "$OFF"; do
    echo "== llama_e2e ${env:-default}"
    env $env timeout 260 python3 bench/llama_e2e.py --variants dense,sparsecc-w4,sparsecc-w8 --batches 1,16 \
      --prefill 0 --compile on --budget 240 --out ${OUT:-/tmp}/e2e-${env:+off}.md 2>&1 | grep "tokens/s"
  done
fi
