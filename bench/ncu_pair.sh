#!/bin/sh
# The same hardware counters on sparse_mm and on cuSPARSELt's kernel (torch's 2:4 mm) for one
# fp16 GEMM, under ncu's locked clocks: per clock, where does one spend cycles the other does
# not? Metrics this ncu does not know are left out (their names move between versions).
#     sh bench/ncu_pair.sh [M N K [TILE]]   (TILE: sparsecc's tile, e.g. 128x256x64w8s4g16)
# EXTRA_METRICS="a b ..." adds metrics; SKIP_PEER=1 profiles sparsecc only.
set -e
want="gpu__time_duration.sum sm__cycles_elapsed.avg.per_second sm__cycles_elapsed.max
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
sm__inst_executed_pipe_tensor_op_gmma.sum smsp__inst_executed.sum
l1tex__throughput.avg.pct_of_peak_sustained_active lts__throughput.avg.pct_of_peak_sustained_elapsed
lts__t_bytes.sum dram__bytes_read.sum dram__bytes_write.sum
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct smsp__warp_issue_stalled_wait_per_warp_active.pct
smsp__warp_issue_stalled_barrier_per_warp_active.pct smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct
smsp__warp_issue_stalled_sleeping_per_warp_active.pct smsp__warp_issue_stalled_membar_per_warp_active.pct
launch__grid_size launch__block_size launch__registers_per_thread $EXTRA_METRICS"
known=$(ncu --query-metrics --csv 2>/dev/null | cut -d, -f1 | tr -d '"')
list=""
for m in $want; do
  base=${m%%.*}
  if echo "$known" | grep -qx "$base"; then list="$list,$m"; else echo "ncu lacks $base" >&2; fi
done
list=${list#,}
shape="${1:-8192} ${2:-8192} ${3:-8192}"
echo "== sparsecc"
ncu --kernel-name sparse_mm_kernel --launch-skip 1 --launch-count 1 --metrics "$list" \
    python bench/ncu_mm.py $shape $4 | sed -n '/Section\|----\|[a-z]__/p'
[ -n "$SKIP_PEER" ] && exit 0
echo "== cuSPARSELt"
ncu --nvtx --nvtx-include "peer/" --metrics "$list" python bench/peer_kernels.py $shape \
    | sed -n '/Section\|----\|[a-z]__/p'
