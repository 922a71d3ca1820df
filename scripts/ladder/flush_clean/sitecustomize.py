"""An experiment, not part of cudabench: a cold-L2 flush that leaves the L2 clean.

Put this folder first on PYTHONPATH and set CUDABENCH_EXPERIMENT_FLUSH=clean: every Python
process (the command and its GPU worker) then patches PycudaEngine._flush_l2 so that, after
the usual memset of twice the L2, a kernel reads another buffer of twice the L2's size.
Reading evicts the memset's dirty lines, so their write-back happens inside the flush, not
inside the next timed kernel, and the L2 is left holding clean lines of a buffer no kernel
uses. With the variable unset or anything else, nothing is patched. flush_check.sh compares
the two flushes (issue 25: whether the cold-L2 dot/copy ratio depends on the flush's dirty
lines). A marker file in $CUDABENCH_EXPERIMENT_MARKS (if set) records each patched process.
"""

from __future__ import annotations

import os

if os.environ.get("CUDABENCH_EXPERIMENT_FLUSH") == "clean":
    from typing import Any

    from cudabench.engines import pycuda_engine

    _SOURCE = r"""
    extern "C" __global__ void read_all(const uint4* p, long long n, int flag, unsigned* out)
    {
        unsigned acc = 0;
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
             i += (long long)gridDim.x * blockDim.x) {
            const uint4 v = p[i];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        if (flag && acc == 0x9e3779b9u) out[0] = acc;  // flag is 0: the loads stay
    }
    """
    _original = pycuda_engine.PycudaEngine._flush_l2

    def _clean_flush(self: Any) -> None:
        _original(self)  # the memset of twice the L2: dirty lines
        state = getattr(self, "_experiment_clean", None)
        if state is None:
            import numpy as np
            from pycuda.compiler import SourceModule

            nbytes = 2 * self.info.l2_bytes // 16 * 16
            buffer = self.allocate(nbytes)
            self.cuda.memset_d32(buffer, 1, nbytes // 4)  # written once, then only read
            self.context.synchronize()
            sink = self.allocate(16)
            kernel = SourceModule(_SOURCE, no_extern_c=True).get_function("read_all")
            state = (kernel, buffer, np.int64(nbytes // 16), sink)
            self._experiment_clean = state
            marks = os.environ.get("CUDABENCH_EXPERIMENT_MARKS")
            if marks:
                os.makedirs(marks, exist_ok=True)
                with open(os.path.join(marks, f"clean-{os.getpid()}"), "w") as mark:
                    mark.write(f"{nbytes} bytes read after each memset\n")
        kernel, buffer, count, sink = state
        kernel(buffer, count, np_int32_zero, sink, block=(256, 1, 1), grid=(132 * 8, 1))

    import numpy as _np

    np_int32_zero = _np.int32(0)
    pycuda_engine.PycudaEngine._flush_l2 = _clean_flush  # type: ignore[method-assign]
