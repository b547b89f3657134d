# The low-precision table of issue 15 (int8, fp8, tf32), and with `tests` their GPU tests first,
# in one device call:   bash bench/gpu_8bit.sh [tests] [quick]
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD SPARSECC_CACHE_DIR=/tmp/scc
case " $* " in *" tests "*)
  timeout 300 python3 -m pytest -q -p no:cacheprovider test/python/ops/test_sparse_mm_8bit.py test/python/formats/test_nv12.py -m gpu 2>&1 | tail -3;;
esac
case " $* " in *" quick "*) timeout 250 python3 bench/low_precision.py --quick 2>&1 | tail -8;;
  *) timeout 500 python3 bench/low_precision.py --out ${OUT:-/tmp}/low-precision-current.md 2>&1 | grep -v "^|" | tail -30; cat ${OUT:-/tmp}/low-precision-current.md;;
esac
