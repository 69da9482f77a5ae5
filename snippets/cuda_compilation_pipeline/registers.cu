// registers.cu: a kernel that needs many registers, to watch -maxrregcount and __launch_bounds__
// move them (and spill the rest to local memory).
//
// Each thread sorts one column of 32 floats with a bitonic network. Every index into v[] is a
// compile-time constant once the loops are unrolled, so the 32 values can live in registers.
//
//   nvcc -arch=sm_90 -Xptxas -v -c registers.cu                       # what ptxas gives it
//   nvcc -arch=sm_90 -Xptxas -v -maxrregcount=24 -c registers.cu      # cap every kernel of the file
//   nvcc -arch=sm_90 -Xptxas -v -DMIN_BLOCKS=8 -c registers.cu        # cap through __launch_bounds__
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "registers: %s failed: %s (%s)\n", #call, cudaGetErrorString(err_), \
                   cudaGetErrorName(err_));                                                  \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

// --8<-- [start:bounds]
// __launch_bounds__(max threads per block, min resident blocks per multiprocessor): ptxas must
// fit MIN_BLOCKS blocks of THREADS threads in the 65536 registers of one multiprocessor,
// so at most 65536 / (THREADS * MIN_BLOCKS) registers per thread (32 for MIN_BLOCKS=8).
#ifdef MIN_BLOCKS
#define BOUNDS __launch_bounds__(THREADS, MIN_BLOCKS)
#else
#define BOUNDS
#endif
// --8<-- [end:bounds]

// --8<-- [start:kernel]
constexpr int K = 32;          // values per thread
constexpr int THREADS = 256;   // threads per block, used by the launch and by __launch_bounds__

__device__ __forceinline__ void sort32(float (&v)[K]) {
#pragma unroll
  for (int size = 2; size <= K; size <<= 1)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride >>= 1)
#pragma unroll
      for (int a = 0; a < K; ++a) {
        const int b = a ^ stride;
        if (b > a) {                                   // compare-exchange v[a], v[b]
          const bool up = (a & size) == 0;
          const float lo = fminf(v[a], v[b]), hi = fmaxf(v[a], v[b]);
          v[a] = up ? lo : hi;
          v[b] = up ? hi : lo;
        }
      }
}

__global__ void BOUNDS sort_columns(int n,                        // columns (one per thread)
                                    const float* __restrict__ x,  // K x n, row-major
                                    float* __restrict__ y) {      // K x n, each column sorted
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = x[k * n + i];   // a warp reads 32 consecutive floats
  sort32(v);
#pragma unroll
  for (int k = 0; k < K; ++k) y[k * n + i] = v[k];
}

// --8<-- [end:kernel]

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : (1 << 22);   // 4M columns: 512 MiB in, 512 MiB out
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  if (n <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: registers [columns > 0] [repetitions > 0]\n");
    return 2;
  }
  std::vector<float> hx(size_t(K) * n);
  unsigned s = 12345u;
  for (auto& v : hx) { s = s * 1664525u + 1013904223u; v = float(s >> 8) / float(1 << 24); }
  float *x, *y;
  CHECK(cudaMalloc(&x, hx.size() * sizeof(float)));
  CHECK(cudaMalloc(&y, hx.size() * sizeof(float)));
  CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(y, 0xff, hx.size() * sizeof(float)));   // poison: NaNs where nothing was written
  const int grid = (n + THREADS - 1) / THREADS;
  auto t0 = std::chrono::steady_clock::now();         // the first launch loads (or JIT-compiles) the kernel
  sort_columns<<<grid, THREADS>>>(n, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> hy(hx.size());
  CHECK(cudaMemcpy(hy.data(), y, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)                         // every column ascending (a NaN fails too)
    for (int k = 1; k < K; ++k)
      if (!(hy[size_t(k - 1) * n + i] <= hy[size_t(k) * n + i])) {
        std::fprintf(stderr, "registers: column %d not sorted\n", i);
        return 1;
      }
  for (int i = 0; i < n; i += 997) {                  // and a sample holds exactly its input values
    float col[K];
    for (int k = 0; k < K; ++k) col[k] = hx[size_t(k) * n + i];
    std::sort(col, col + K);
    for (int k = 0; k < K; ++k)
      if (col[k] != hy[size_t(k) * n + i]) {
        std::fprintf(stderr, "registers: column %d lost or changed a value\n", i);
        return 1;
      }
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> t(reps);
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(e0));
    sort_columns<<<grid, THREADS>>>(n, x, y);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&t[r], e0, e1));
  }
  std::sort(t.begin(), t.end());
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, sort_columns));
  int blocks_per_sm;                                   // what the register count leaves room for
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, sort_columns, THREADS, 0));
  std::printf("sort_columns ok: %d registers, %zu bytes local memory per thread, %d blocks of %d "
              "threads per multiprocessor, first launch %.3f ms, median %.3f ms over %d runs\n",
              attr.numRegs, attr.localSizeBytes, blocks_per_sm, THREADS, first_ms, t[reps / 2], reps);
  return 0;
}
