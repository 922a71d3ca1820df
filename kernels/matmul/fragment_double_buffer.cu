// cudabench: matmul
// description: prefetch_splitk's 128x128 tiles and 8x8 per thread, plus the next k's shared-memory fragments double-buffered in registers, warp lanes interleaved as in CUTLASS (LDS.128s whose lane pairs share addresses), the next K tile fetched 8 rows at a time in a branch-free loop (BK 16 and 32 need no more prefetch registers than 8), one barrier per tile, grouped block order for L2, and split-K by shape.
// dtypes: float32
// param BK: default 16; allowed 8, 16, 32
// param GROUP_M: default 16; allowed 1, 4, 8, 16
// param MIN_BLOCKS: default 2; allowed 1, 2
// param SPLIT_MAX: default 8; allowed 1, 2, 4, 8, 16
// launch matmul_fragment_double_buffer_zero: grid max(1, cdiv(M * N, 1024) * min(1, max(1, min(SPLIT_MAX, (2 * SM_COUNT) // (cdiv(N, 128) * cdiv(M, 128)), cdiv(K, 256))) - 1)); block 256
// launch matmul_fragment_double_buffer: grid cdiv(N, 128), cdiv(M, 128), max(1, min(SPLIT_MAX, (2 * SM_COUNT) // (cdiv(N, 128) * cdiv(M, 128)), cdiv(K, 256))); block 256; dynamic_shared 2 * BK * (128 + 4 + 128) * 4

// What this rung changes against prefetch_splitk, and why.
//
// prefetch_splitk (0.79 of cuBLAS at 4096^3) loads a k's four fragments (LDS.128) and uses
// them in the same step, so each k starts with a shared-memory latency that 4 warps per
// scheduler must hide; after each barrier (one per 8 of K) all of a block's warps wait for
// their first fragments together. The changes:
//
// - Fragments double-buffered in registers: while the 64 FMAs of step k run, the fragments
//   of step k+1 (8 of A, 8 of B: four LDS.128) load into a second register set. The last
//   step of a tile loads the next tile's first fragments just after the barrier, so those
//   loads too overlap 64 FMAs. That is 2 x 16 fragment registers beside 64 accumulators.
// - The next tile goes global -> registers -> shared memory in pieces of 8 rows of K. Piece
//   p (one float4 of A and one of B per thread) is loaded at step 8p and stored into the
//   other buffer at step 8p + 7. (ptxas moves the LDG down to about step 8p + 3 to save
//   registers, which still leaves about 4 x 64 FMAs a warp to cover the latency.) So BK 16
//   and 32 halve and quarter the barriers while keeping BK 8's 8 prefetch registers.
//   prefetch_splitk at BK 16 holds 16 and spills at 2 blocks an SM. Storing into the other
//   buffer early is safe: nothing has read it since the barrier that ended the previous tile.
// - The tile loop's body has no branch (see mainloop): prefetch_splitk's `if (more)` around
//   the loads let the compiler put the load right next to its store.
// - Lanes interleaved as in CUTLASS's SIMT warps (RowMajorInterleaved<2>): a warp is
//   4 (ty) x 8 (tx) threads. Lane bits 0 and 4 give ty, and bits 1-3 give tx. Lanes n and
//   n ^ 1 then read the same B fragment, and lanes n and n ^ 2 the same A fragment. NVIDIA
//   says (developer forums, for sm_7x) that an LDS.128 takes 4 cycles of the SM's 128-byte
//   return path unless lane pairs n, n ^ 1 or n, n ^ 2 share addresses, and then it takes 2.
//   prefetch_splitk's lanes (ty = lane / 8) pair up for A but not for B. Per k a warp then
//   needs 8 return cycles instead of 12; at full FMA rate the SM's shared-memory return path
//   is about 50% busy instead of 75%. (This is reasoning from the hardware's rules; the
//   counters, --counters, have not been read for it.)
// - Shared-memory layout without bank conflicts: B as it is (a B fragment is 8 consecutive
//   float4, an A fragment 4), A transposed (As[k][m]) with rows padded to 132 floats. A
//   thread fetches A's row tid / 2 at k offset 4 (tid % 2) within each piece. So a warp's
//   transposing stores hit 16 rows at two k 4 apart: banks (4 k + r) mod 32 are 32 different
//   banks for each of the 4 scalar stores, at every BK. (prefetch_splitk's mapping of A at
//   BK 16 puts 4 k-chunks in a warp: 2-way conflicts.)
// - Grouped block order: blocks start in blockIdx order. In row-major order the ~264 blocks
//   in flight (2 an SM) at 4096^3 cover 8 block rows x 32 block columns: 40 panels of A and
//   B. Renumbered in groups of GROUP_M block rows, column by column within a group, they
//   cover 16 x 16.5 at GROUP_M 16: 33 panels, so L2 holds fewer distinct bytes at a time.
//   GROUP_M = 1 keeps row-major order.
// - The body is compiled twice, for 16-byte-aligned rows (LDG.128) and for scalar loads,
//   and the path is chosen once per block, so the hot loop carries no alignment test.
//
// Kept from prefetch_splitk:
// - the 128 x 128 tile of 256 threads, 8 x 8 per thread as four 4 x 4 quarters (rows ty*4
//   and 64 + ty*4, columns tx*4 and 64 + tx*4), 4 LDS.128 per 64 FMAs;
// - split-K by the grid's third extent: slices add into C with atomicAdd after a zeroing
//   launch. With one slice, as at 4096^3, C is stored plainly, and the zeroing launch is one
//   block whose zeros the main kernel overwrites;
// - the edges: a load past M, K or N is a zero, and C is written only inside M x N. Vectors
//   are used only where K and N are multiples of 4 and A and B are 16-byte aligned;
// - MIN_BLOCKS for __launch_bounds__: 2 caps registers at 128, so 2 blocks share an SM.
//
// ptxas (nvcc 13.0, sm_90) at MIN_BLOCKS 2 uses 128 registers with no spills at every BK
// and GROUP_M. At MIN_BLOCKS 1 it uses 155-167, so one block an SM. Shared memory is
// dynamic because BK 32 (66.6 KB for two buffers) is over the 48 KB of static shared
// memory; BK 16 takes 33.3 KB a block. The tile loop at BK 16 is 1,152 instructions, 89%
// FFMA (BK 8: 586, 87%; prefetch_splitk's: 79%, both alignment paths in one loop). At
// 18 KB of code (BK 32: 36 KB) it may not fit the SM's first-level instruction cache, where
// BK 8 (9 KB) does; which BK wins was left to a GPU to say, and BK 16 did (below).
//
// Measured on one H100 80GB HBM3 (2026-11-26, SM clock 1,980 MHz throughout, float32, cold
// L2, one run beside cuBLAS; scripts/ladder/draft_call.sh, docs/kernels.md):
// - 4096^3: 2.910 ms, 47.2 TFLOP/s, 70.6% of the FP32 peak, 0.91 of cuBLAS (2.662 ms);
//   prefetch_splitk 3.331 ms (0.80), warptile 3.807 ms (0.70). 1000^3 (4 K slices):
//   57.02 us, 1.07 of cuBLAS (60.86 us); prefetch_splitk 61.31 us (0.99). So this rung runs
//   by default and prefetch_splitk only on request.
// - The defaults are the best of `--best` over BK=8,16,32 GROUP_M=1,8,16 MIN_BLOCKS=1,2 at
//   4096^3: BK=16 GROUP_M=8 MIN_BLOCKS=2 2.91 ms, tied (0.0%) with GROUP_M=16, kept as the
//   default. MIN_BLOCKS=2 beats 1 at every BK and GROUP_M; grouped order (8 or 16) beats
//   GROUP_M=1 at every BK and MIN_BLOCKS, by 0.2% (BK 32, 2 blocks) to 10% (BK 8, 1 block);
//   BK=32 (2.98 ms at best) loses to BK=16 by 2%, BK=8 (2.93 ms) by 1%; the worst,
//   BK=8 GROUP_M=1 MIN_BLOCKS=1, took 3.70 ms.
// - Checked: PASS at 14 shapes from 1x1x1 to 3001x1000x2000, at every combination of
//   BK=8,16,32 GROUP_M=1,16 MIN_BLOCKS=1,2 SPLIT_MAX=1,8 at three odd shapes (72 rows), and
//   no error from compute-sanitizer memcheck and racecheck at 67x45x131 and 130x37x132.

#define BM 128
#define BN 128
#define THREADS 256
#define LDA (BM + 4)                   // padded row of the transposed A tile (floats)
#define PIECES (BK / 8)                // 8-row pieces of K per tile: one float4 of A, one of B
#define A_TILE (BK * LDA)              // floats of one transposed A tile
#define STAGE (BK * LDA + BK * BN)     // floats of one buffer: A tile, then B tile

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Shared-memory accesses, one helper per kind of instruction (LDS.128, STS.32, STS.128).
__device__ __forceinline__ float4 lds128(const float* p)
{
    return *reinterpret_cast<const float4*>(p);
}

__device__ __forceinline__ void sts32(float* p, float v)
{
    *p = v;
}

__device__ __forceinline__ void sts128(float* p, float4 v)
{
    *reinterpret_cast<float4*>(p) = v;
}

// Zero C before the slices add into it: one float4 (or its tail) per thread. With one
// slice the grid is a single block and the main kernel overwrites C anyway.
extern "C" __global__ void matmul_fragment_double_buffer_zero(const float* __restrict__ A,
                                                              const float* __restrict__ B,
                                                              float* __restrict__ C, int M,
                                                              int K, int N)
{
    const long long total = (long long)M * N;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < total && aligned16(C)) {
        *reinterpret_cast<float4*>(C + i) = make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
        for (long long j = i; j < i + 4 && j < total; ++j) C[j] = 0.f;
    }
}

// What a thread loads of each 8-row piece of a tile: A's row a_row (of the block's 128) at
// k offset a_k (0 or 4) within the piece, B's row b_row (0..7) of the piece at column b_col.
// ga and gb point at those elements for the tile being fetched; a_in and b_in say whether
// the row of A and the column of B are inside the matrix, kn is the tile's first k.
struct Fetch {
    const float* ga;
    const float* gb;
    int kn;
    bool a_in, b_in;
};

// Piece p of the tile at f.kn, global -> registers; zeros past M, N and kend (K, or the end
// of this block's slice of K).
template <bool VEC>
__device__ __forceinline__ void load_piece(const Fetch& f, int p, int a_k, int b_row, int bc,
                                           int kend, int N, float4& ra, float4& rb)
{
    const int ka = f.kn + 8 * p + a_k;    // first k of this thread's A vector
    const int kb = f.kn + 8 * p + b_row;  // this thread's k row of B
    const float* pa = f.ga + 8 * p;
    const float* pb = f.gb + (size_t)(8 * p) * N;
    if (VEC) {
        // K and N multiples of 4, rows 16-byte aligned: a vector is wholly in or out.
        ra = f.a_in && ka < kend ? *reinterpret_cast<const float4*>(pa)
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
        rb = f.b_in && kb < kend ? *reinterpret_cast<const float4*>(pb)
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
        ra.x = f.a_in && ka < kend ? pa[0] : 0.f;
        ra.y = f.a_in && ka + 1 < kend ? pa[1] : 0.f;
        ra.z = f.a_in && ka + 2 < kend ? pa[2] : 0.f;
        ra.w = f.a_in && ka + 3 < kend ? pa[3] : 0.f;
        const bool in = kb < kend;
        rb.x = in && bc < N ? pb[0] : 0.f;
        rb.y = in && bc + 1 < N ? pb[1] : 0.f;
        rb.z = in && bc + 2 < N ? pb[2] : 0.f;
        rb.w = in && bc + 3 < N ? pb[3] : 0.f;
    }
}

// Piece p, registers -> the buffer at ws: A transposed (four scalar stores into As[k][m]),
// B as it is (one 128-bit store). sa = &As[a_k][a_row], sb = &Bs[b_row][b_col] of the buffer.
__device__ __forceinline__ void store_piece(float* sa, float* sb, int p, float4 ra, float4 rb)
{
    sts32(sa + (8 * p + 0) * LDA, ra.x);
    sts32(sa + (8 * p + 1) * LDA, ra.y);
    sts32(sa + (8 * p + 2) * LDA, ra.z);
    sts32(sa + (8 * p + 3) * LDA, ra.w);
    sts128(sb + 8 * p * BN, rb);
}

// Four values of C at (r, c..c+3): stored, or added when K is split; inside M x N only.
__device__ __forceinline__ void put4(float* __restrict__ C, int M, int N, int r, int c,
                                     float4 v, bool split, bool vec_c)
{
    if (r >= M) return;
    float* p = C + (size_t)r * N + c;
    if (vec_c && c + 3 < N) {
        if (!split) {
            *reinterpret_cast<float4*>(p) = v;
        } else {
#if __CUDA_ARCH__ >= 900
            atomicAdd(reinterpret_cast<float4*>(p), v);
#else
            atomicAdd(p, v.x); atomicAdd(p + 1, v.y); atomicAdd(p + 2, v.z); atomicAdd(p + 3, v.w);
#endif
        }
        return;
    }
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (c + j < N) {
            if (split) atomicAdd(p + j, e[j]);
            else p[j] = e[j];
        }
    }
}

// Tiles first .. last-1 of K into acc. Fragments: fa[s] = A's 8 rows (two float4), fb[s] =
// B's 8 columns, s = k % 2 the set step k computes with while set (k+1) % 2 loads.
//
// The tile loop's body has no branch: a branch around the prefetch (`if (more) load`, as in
// prefetch_splitk) lets the compiler merge it with the `if (more) store` seven steps later,
// moving the steps' FMAs above both, and the load then waits for global memory right before
// its store (nvcc 13.0 did exactly that here). Instead a load past the slice is predicated
// off through its bounds (kend, the slice's end in K: a tile past the slice is past kend),
// and the last tile stores its zeros, synchronises and reads the next fragments anyway:
// nobody reads that buffer again.
template <bool VEC>
__device__ __forceinline__ void mainloop(float* smem, const float* __restrict__ A,
                                         const float* __restrict__ B, int M, int K, int N,
                                         int row0, int col0, int first, int last, int tid,
                                         int ty, int tx, float (&acc)[8][8])
{
    const int a_row = tid / 2, a_k = (tid % 2) * 4;
    const int b_row = tid / 32, b_col = (tid % 32) * 4;
    const int kend = min(K, last * BK);
    Fetch f;
    f.kn = first * BK;
    f.a_in = row0 + a_row < M;
    f.b_in = col0 + b_col < N;  // VEC: N % 4 == 0, so the whole vector is inside
    f.ga = A + (size_t)(row0 + a_row) * K + f.kn + a_k;
    f.gb = B + (size_t)(f.kn + b_row) * N + col0 + b_col;

    // Offsets (floats) of this thread's fragments and stores within a buffer.
    const int frag_a = ty * 4, frag_b = A_TILE + tx * 4;
    const int st_a = a_k * LDA + a_row, st_b = A_TILE + b_row * BN + b_col;

    // Prologue: tile `first` into buffer 0, then its k = 0 fragments.
    float4 ra, rb;
#pragma unroll
    for (int p = 0; p < PIECES; ++p) {
        load_piece<VEC>(f, p, a_k, b_row, col0 + b_col, kend, N, ra, rb);
        store_piece(smem + st_a, smem + st_b, p, ra, rb);
    }
    f.kn += BK;
    f.ga += BK;
    f.gb += (size_t)BK * N;
    __syncthreads();

    float4 fa[2][2], fb[2][2];
    fa[0][0] = lds128(smem + frag_a);
    fa[0][1] = lds128(smem + frag_a + 64);
    fb[0][0] = lds128(smem + frag_b);
    fb[0][1] = lds128(smem + frag_b + 64);

    int rd = 0;  // the buffer being read: 0 or STAGE floats
#pragma unroll 1
    for (int t = first; t < last; ++t) {
        const float* rs = smem + rd;
        float* ws = smem + (STAGE - rd);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const int cur = k % 2, nxt = (k + 1) % 2;
            if (k % 8 == 0) load_piece<VEC>(f, k / 8, a_k, b_row, col0 + b_col, kend, N, ra, rb);
            if (k % 8 == 7) store_piece(ws + st_a, ws + st_b, k / 8, ra, rb);
            if (k + 1 < BK) {
                fa[nxt][0] = lds128(rs + frag_a + (k + 1) * LDA);
                fa[nxt][1] = lds128(rs + frag_a + (k + 1) * LDA + 64);
                fb[nxt][0] = lds128(rs + frag_b + (k + 1) * BN);
                fb[nxt][1] = lds128(rs + frag_b + (k + 1) * BN + 64);
            } else {
                __syncthreads();  // the next tile is in ws; everyone is done reading rs
                fa[nxt][0] = lds128(ws + frag_a);
                fa[nxt][1] = lds128(ws + frag_a + 64);
                fb[nxt][0] = lds128(ws + frag_b);
                fb[nxt][1] = lds128(ws + frag_b + 64);
            }
            const float a[8] = {fa[cur][0].x, fa[cur][0].y, fa[cur][0].z, fa[cur][0].w,
                                fa[cur][1].x, fa[cur][1].y, fa[cur][1].z, fa[cur][1].w};
            const float b[8] = {fb[cur][0].x, fb[cur][0].y, fb[cur][0].z, fb[cur][0].w,
                                fb[cur][1].x, fb[cur][1].y, fb[cur][1].z, fb[cur][1].w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        f.kn += BK;
        f.ga += BK;
        f.gb += (size_t)BK * N;
        rd = STAGE - rd;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
matmul_fragment_double_buffer(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int K, int N)
{
    extern __shared__ __align__(16) float smem[];  // 2 x STAGE floats

    // A warp is 4 (ty) x 8 (tx) threads, interleaved as CUTLASS's SIMT warps are (its
    // RowMajorInterleaved<2> lane layout): lane bit 0 and bit 4 give ty, bits 1-3 tx. Lanes
    // n and n ^ 1 then read the same B fragment, lanes n and n ^ 2 the same A fragment.
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ty = (warp / 2) * 4 + ((lane & 1) | ((lane >> 4) << 1));  // rows ty*4, 64 + ty*4
    const int tx = (warp % 2) * 8 + ((lane >> 1) & 7);  // columns tx*4, 64 + tx*4

    // Grouped order: GROUP_M block rows at a time, down the rows first, then across.
    int bx = blockIdx.x, by = blockIdx.y;
    if (GROUP_M > 1) {
        const int per_group = GROUP_M * (int)gridDim.x;
        const int pid = (int)blockIdx.y * (int)gridDim.x + (int)blockIdx.x;
        const int group = pid / per_group, in_group = pid - group * per_group;
        const int first_row = group * GROUP_M;
        const int rows = min((int)gridDim.y - first_row, GROUP_M);
        by = first_row + in_group % rows;
        bx = in_group / rows;
    }
    const int row0 = by * BM, col0 = bx * BN;

    // This block's slice of K, in whole tiles.
    const int tiles = (K + BK - 1) / BK;
    const int per_slice = (tiles + gridDim.z - 1) / gridDim.z;
    const int first = blockIdx.z * per_slice;
    const int last = min(tiles, first + per_slice);
    const bool split = gridDim.z > 1;
    if (first >= last) return;  // an empty slice adds nothing (one slice is never empty)

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    if (K % 4 == 0 && N % 4 == 0 && aligned16(A) && aligned16(B))
        mainloop<true>(smem, A, B, M, K, N, row0, col0, first, last, tid, ty, tx, acc);
    else
        mainloop<false>(smem, A, B, M, K, N, row0, col0, first, last, tid, ty, tx, acc);

    const bool vec_c = N % 4 == 0 && aligned16(C);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        put4(C, M, N, r, col0 + tx * 4,
             make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), split, vec_c);
        put4(C, M, N, r, col0 + 64 + tx * 4,
             make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), split, vec_c);
    }
}
