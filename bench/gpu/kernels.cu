/* bench/gpu/kernels.cu: the hand-written CUDA references of arrayc-gpubench.
 *
 * Where the CUDA toolkit has no library routine for a benchmark, the
 * reference is the kernel a careful CUDA programmer writes first, as
 * the textbooks and the CUDA samples give it:
 *   - Black-Scholes: one option per thread, the formula of
 *     bench/programs/blackscholes.ac and bench/ref/ref.c in float (expf,
 *     logf, sqrtf and IEEE division, nvcc's defaults: no fast math, as
 *     arrayc, which uses libdevice's precise functions);
 *   - SpMV in CSR: the "vector" kernel (Bell and Garland, "Efficient Sparse
 *     Matrix-Vector Multiplication on CUDA", 2008): one warp per row, the
 *     lanes stride over the row's entries, a shuffle reduction;
 *   - the small kernel of the iterate micro-benchmark: x * 0.5 + 1 over a
 *     few thousand elements, launched once per step with two buffers in
 *     turn, which is what a CUDA loop costs per iteration;
 *   - the two kernels of the iterate_fold micro-benchmark: per step, the
 *     sum zeroed (cudaMemsetAsync), a grid-stride sum with a shuffle tree
 *     per block and one atomicAdd per block, then x * 0.5 + sum * 0.0001;
 *   - the neighbour reads (forward differences, the 15-point moving
 *     average, one 2-D Jacobi step with a zero boundary): one output
 *     element per thread, read straight from global memory, neighbours
 *     included (the naive version: the L1 and L2 caches catch what reuse
 *     they can; arrayc's default pipeline stages the input in shared
 *     memory instead). The sums are in the programs' order.
 * Each launcher queues on the given stream and checks the launch; errors
 * during execution surface at the caller's next synchronisation.
 */
#include "gpubench.h"

namespace {

constexpr int kBlock = 256;
constexpr int kJacobiX = 32, kJacobiY = 8; /* a warp per row of a block: coalesced */

/* bench/programs/ma15.ac's weights, in its order */
__constant__ float kMa15[15] = {0.01f, 0.02f, 0.04f, 0.07f, 0.10f, 0.12f, 0.14f, 0.00f,
                                0.14f, 0.12f, 0.10f, 0.07f, 0.04f, 0.02f, 0.01f};

__device__ __forceinline__ float cndf(float d) {
  const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  const float w = 0.3989422804f * expf(-0.5f * d * d) * k *
                  (0.31938153f +
                   k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
  return d > 0.0f ? 1.0f - w : w;
}

__global__ void blackscholes_kernel(int64_t n, const float *__restrict__ S,
                                    const float *__restrict__ X, const float *__restrict__ T,
                                    float r, float v, float *__restrict__ call,
                                    float *__restrict__ put) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float s = S[i], x = X[i], t = T[i];
  const float sq = sqrtf(t);
  const float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sq);
  const float d2 = d1 - v * sq;
  const float e = expf(-r * t);
  const float c1 = cndf(d1), c2 = cndf(d2);
  call[i] = s * c1 - x * e * c2;
  put[i] = x * e * (1.0f - c2) - s * (1.0f - c1);
}

__global__ void spmv_csr_vector_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                                       const int32_t *__restrict__ cols,
                                       const float *__restrict__ vals,
                                       const float *__restrict__ x, float *__restrict__ y) {
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  /* whole warps leave together: the shuffles below need every lane */
  if (row >= rows)
    return;
  const int64_t lo = rowptr[row], hi = rowptr[row + 1];
  float sum = 0.0f;
  for (int64_t k = lo + lane; k < hi; k += 32)
    sum += vals[k] * __ldg(&x[cols[k]]);
  for (int off = 16; off > 0; off /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0)
    y[row] = sum;
}

__global__ void iterate_step_kernel(int n, const float *__restrict__ x, float *__restrict__ y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] * 0.5f + 1.0f;
}

__global__ void iterate_sum_kernel(int n, const float *__restrict__ x, float *__restrict__ sum) {
  __shared__ float warp_sums[kBlock / 32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v += x[i];
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2)
      v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0)
      atomicAdd(sum, v);
  }
}

__global__ void iterate_fold_map_kernel(int n, const float *__restrict__ x,
                                        const float *__restrict__ sum, float *__restrict__ y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] * 0.5f + *sum * 0.0001f;
}

__global__ void forward_diff_kernel(int64_t n, const float *__restrict__ x,
                                    float *__restrict__ out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1)
    out[i] = x[i + 1] - x[i];
}

__global__ void ma15_kernel(int64_t n, const float *__restrict__ x, float *__restrict__ out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n - 14)
    return;
  float s = kMa15[0] * x[i];
#pragma unroll
  for (int k = 1; k < 15; k++)
    s += kMa15[k] * x[i + k];
  out[i] = s;
}

__global__ void jacobi2d_kernel(int64_t rows, int64_t cols, const float *__restrict__ g,
                                float *__restrict__ out) {
  const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= rows || c >= cols)
    return;
  const int64_t i = r * cols + c;
  const float north = r > 0 ? g[i - cols] : 0.0f, south = r < rows - 1 ? g[i + cols] : 0.0f;
  const float west = c > 0 ? g[i - 1] : 0.0f, east = c < cols - 1 ? g[i + 1] : 0.0f;
  out[i] = 0.25f * (north + south + west + east);
}

unsigned blocks_for(int64_t threads) {
  int64_t b = (threads + kBlock - 1) / kBlock;
  if (b < 1)
    b = 1;
  if (b > 0x7fffffff)
    throw Failure("grid too large for a one-dimensional launch");
  return (unsigned)b;
}

} // namespace

void ref_blackscholes(cudaStream_t s, int64_t n, const float *S, const float *X, const float *T,
                      float r, float v, float *call, float *put) {
  blackscholes_kernel<<<blocks_for(n), kBlock, 0, s>>>(n, S, X, T, r, v, call, put);
  CK_LAUNCH();
}

void ref_spmv_csr_vector(cudaStream_t s, int64_t rows, const int64_t *rowptr, const int32_t *cols,
                         const float *vals, const float *x, float *y) {
  spmv_csr_vector_kernel<<<blocks_for(rows * 32), kBlock, 0, s>>>(rows, rowptr, cols, vals, x, y);
  CK_LAUNCH();
}

void ref_forward_diff(cudaStream_t s, int64_t n, const float *x, float *out) {
  forward_diff_kernel<<<blocks_for(n - 1), kBlock, 0, s>>>(n, x, out);
  CK_LAUNCH();
}

void ref_ma15(cudaStream_t s, int64_t n, const float *x, float *out) {
  ma15_kernel<<<blocks_for(n - 14), kBlock, 0, s>>>(n, x, out);
  CK_LAUNCH();
}

void ref_jacobi2d(cudaStream_t s, int64_t rows, int64_t cols, const float *g, float *out) {
  const int64_t bx = (cols + kJacobiX - 1) / kJacobiX, by = (rows + kJacobiY - 1) / kJacobiY;
  if (bx > 0x7fffffff || by > 65535)
    throw Failure("grid too large for a two-dimensional launch");
  const dim3 grid((unsigned)(bx ? bx : 1), (unsigned)(by ? by : 1)), block(kJacobiX, kJacobiY);
  jacobi2d_kernel<<<grid, block, 0, s>>>(rows, cols, g, out);
  CK_LAUNCH();
}

/* steps applications of the step kernel, alternating between a and b
 * (a holds the input); *result is the buffer holding the last step's
 * output (a itself for no steps). */
void ref_iterate_fold(cudaStream_t s, int n, int steps, float *a, float *b, float *sum,
                      float **result) {
  float *src = a, *dst = b;
  for (int i = 0; i < steps; i++) {
    CK(cudaMemsetAsync(sum, 0, sizeof *sum, s));
    iterate_sum_kernel<<<blocks_for(n), kBlock, 0, s>>>(n, src, sum);
    CK_LAUNCH();
    iterate_fold_map_kernel<<<blocks_for(n), kBlock, 0, s>>>(n, src, sum, dst);
    CK_LAUNCH();
    float *tmp = src;
    src = dst;
    dst = tmp;
  }
  *result = src;
}

void ref_iterate_map(cudaStream_t s, int n, int steps, float *a, float *b, float **result) {
  float *src = a, *dst = b;
  for (int i = 0; i < steps; i++) {
    iterate_step_kernel<<<blocks_for(n), kBlock, 0, s>>>(n, src, dst);
    CK_LAUNCH();
    float *tmp = src;
    src = dst;
    dst = tmp;
  }
  *result = src;
}
