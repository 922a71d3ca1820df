// cudabench: softmax
// description: One thread per row: three passes over the row (max, sum of exponentials, write).
// param BLOCK: default 128; allowed 32, 64, 128, 256
// launch softmax_naive: grid cdiv(ROWS, BLOCK); block BLOCK

extern "C" __global__ void softmax_naive(const DTYPE* __restrict__ x, OUT_TYPE* __restrict__ y,
                                         int ROWS, int COLS)
{
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    if (row >= ROWS) return;
    const DTYPE* in = x + (size_t)row * COLS;
    ACC_TYPE top = (ACC_TYPE)in[0];
    for (int c = 1; c < COLS; ++c) top = max(top, (ACC_TYPE)in[c]);
    ACC_TYPE sum = 0;
    for (int c = 0; c < COLS; ++c) sum += exp((ACC_TYPE)in[c] - top);
    for (int c = 0; c < COLS; ++c)
        y[(size_t)row * COLS + c] = (OUT_TYPE)(exp((ACC_TYPE)in[c] - top) / sum);
}
