// cudabench: softmax
// description: One block per row: the threads stride over the row, and two shared-memory tree reductions give its max and sum.
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// shared_bytes: BLOCK * ACC_SIZE
// launch softmax_block: grid ROWS; block BLOCK

extern "C" __global__ void softmax_block(const DTYPE* __restrict__ x, OUT_TYPE* __restrict__ y,
                                         int ROWS, int COLS)
{
    __shared__ ACC_TYPE scratch[BLOCK];
    const DTYPE* in = x + (size_t)blockIdx.x * COLS;
    OUT_TYPE* out = y + (size_t)blockIdx.x * COLS;

    ACC_TYPE top = (ACC_TYPE)in[0];
    for (int c = threadIdx.x; c < COLS; c += BLOCK) top = max(top, (ACC_TYPE)in[c]);
    scratch[threadIdx.x] = top;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            scratch[threadIdx.x] = max(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
        __syncthreads();
    }
    top = scratch[0];
    __syncthreads();  // every thread has read the max before the sum reuses scratch

    ACC_TYPE sum = 0;
    for (int c = threadIdx.x; c < COLS; c += BLOCK) sum += exp((ACC_TYPE)in[c] - top);
    scratch[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
        __syncthreads();
    }
    sum = scratch[0];
    for (int c = threadIdx.x; c < COLS; c += BLOCK)
        out[c] = (OUT_TYPE)(exp((ACC_TYPE)in[c] - top) / sum);
}
