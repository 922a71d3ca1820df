"""The CUDA-core ladder's rungs in kernels/ (docs/kernels.md), for sass.py and summarize.py:
op -> its ladder variants, in rung order."""

LADDER = {
    "matmul": ("blocktile2d", "vectorized", "warptile", "async_double_buffer", "prefetch_splitk",
               "fragment_double_buffer"),
    "transpose": ("vectorized", "evict_first"),
    "transpose_inplace": ("tile_pairs",),
    "dot": ("vectorized_shuffle", "deterministic", "streaming", "bulk"),
}
