"""What the driver's device-to-device copy kernel is (issue 25): cuMemcpyDtoDAsync of 256 MiB
runs on the SMs (copy_paths.py) and beats a plain 16-byte SM copy by about 1.5%. Run this
under ncu to see its launch (grid, block, registers) and memory counters beside that copy's
(the command behind docs/data/transpose-2026-11-27/copy-probe-ncu.txt; ncu did not profile
the driver's copy, only cupy's fill and this copy):
    ncu --clock-control none --section LaunchStats --section MemoryWorkloadAnalysis \
        --section SpeedOfLight --section InstructionStats \
        --metrics smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
dram__bytes_write.sum,dram__bytes_read.sum python3 scripts/ladder/copy_kernel_probe.py
"""

from __future__ import annotations

import cupy as cp
from copylab import driver_copy, sm_copy

a = cp.ones(2**26, dtype=cp.float32)
b = cp.empty_like(a)
for _ in range(2):
    driver_copy(a, b)()
    sm_copy(a, b)()
cp.cuda.Device().synchronize()
