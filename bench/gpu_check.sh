#!/usr/bin/env bash
# A GPU-machine check of the tree, in phases (each fits one device call):
#
#     bash bench/gpu_check.sh tests      # the GPU test suite (pytest -m gpu)
#     bash bench/gpu_check.sh sanitize   # compute-sanitizer memcheck/racecheck/synccheck, small ragged GEMMs
#     bash bench/gpu_check.sh bench      # the quick side-by-side table (gemm.py --quick) and host costs
#
# Run from the repository root on the device machine; wheels of what it lacks go in .whl/
# (bench/README.md). Logs go to $OUT (else /tmp/gpu_check); a summary is printed last.
set -uo pipefail
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
    export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 SPARSECC_CACHE_DIR=/tmp/sparsecc-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for phase in "${@:-tests}"; do
    case $phase in
    tests)
        workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
        python3 -m pytest -q -m gpu test/python -p no:cacheprovider $workers > "$out/gpu_tests.log" 2>&1
        echo "== GPU tests (exit $?)"; grep -E "passed|failed|^FAILED|^ERROR" "$out/gpu_tests.log" | tail -15 ;;
    sanitize)
        for tool in memcheck racecheck synccheck; do
            # (cuda-python probes driver entry points this driver lacks: host API errors, not the kernel's)
            compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 10 python3 bench/sanitize_small.py > "$out/sanitize_$tool.log" 2>&1
            echo "== $tool (exit $?)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|mismatch" "$out/sanitize_$tool.log" | sort | uniq -c | tail -6
        done ;;
    bench)
        python3 bench/gemm.py --quick > "$out/gemm_quick.log" 2>&1
        echo "== gemm.py --quick (exit $?)"; tail -22 "$out/gemm_quick.log"
        python3 bench/host.py > "$out/host.log" 2>&1
        echo "== host.py (exit $?)"; tail -14 "$out/host.log" ;;
    *) echo "unknown phase '$phase' (tests, sanitize, bench)"; exit 2 ;;
    esac
done
