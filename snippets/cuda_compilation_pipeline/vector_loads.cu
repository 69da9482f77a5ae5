// vector_loads.cu: the same scaling kernel with 4-byte and with 16-byte accesses per thread.
// In SASS the first loads with LDG.E, the second with LDG.E.128; the host program times both.
//
//   nvcc -arch=sm_90 vector_loads.cu -o vector_loads -L<toolchain>/lib && ./vector_loads
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t err_ = (call);                                                                   \
    if (err_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "vector_loads: %s failed: %s (%s)\n", #call, cudaGetErrorString(err_), \
                   cudaGetErrorName(err_));                                                      \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// --8<-- [start:kernels]
__global__ void scale_f32(int n,                          // elements
                          float a,                        // scale factor
                          const float* __restrict__ x,    // input
                          float* __restrict__ y) {        // output: y = a * x
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];                             // 4 bytes in, 4 bytes out per thread
}

__global__ void scale_f32x4(int n4,                       // elements / 4
                            float a,
                            const float4* __restrict__ x, // 16-byte aligned (cudaMalloc is)
                            float4* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];                                      // one 128-bit load per thread
    v.x *= a; v.y *= a; v.z *= a; v.w *= a;
    y[i] = v;                                             // one 128-bit store
  }
}
// --8<-- [end:kernels]

int main(int argc, char** argv) {
  const long long n_arg = argc > 1 ? std::atoll(argv[1]) : (1LL << 28);   // 1 GiB per array
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (n_arg <= 0 || n_arg % 4 != 0 || n_arg > (1LL << 30) || reps <= 0) {
    std::fprintf(stderr, "usage: vector_loads [elements: a multiple of 4, at most 2^30] [repetitions > 0]\n");
    return 2;
  }
  const int n = int(n_arg);
  std::vector<float> hx(n);
  uint32_t s = 2024u;
  for (auto& v : hx) { s = s * 1664525u + 1013904223u; v = float(s >> 8) / float(1 << 24) - 0.5f; }
  float *x, *y;
  CHECK(cudaMalloc(&x, size_t(n) * sizeof(float)));
  CHECK(cudaMalloc(&y, size_t(n) * sizeof(float)));
  CHECK(cudaMemcpy(x, hx.data(), size_t(n) * sizeof(float), cudaMemcpyHostToDevice));
  const float a = 1.75f;
  const int block = 256;
  auto launch = [&](int which) {
    if (which == 0) scale_f32<<<(n + block - 1) / block, block>>>(n, a, x, y);
    else scale_f32x4<<<(n / 4 + block - 1) / block, block>>>(n / 4, a, reinterpret_cast<const float4*>(x),
                                                             reinterpret_cast<float4*>(y));
  };
  const char* names[2] = {"scale_f32", "scale_f32x4"};
  std::vector<float> hy(n);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int which = 0; which < 2; ++which) {
    CHECK(cudaMemset(y, 0xff, size_t(n) * sizeof(float)));   // poison: NaNs where nothing was written
    launch(which);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hy.data(), y, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (hy[i] != a * hx[i]) {
        std::fprintf(stderr, "vector_loads: %s wrong at %d: %g, expected %g\n", names[which], i, hy[i], a * hx[i]);
        return 1;
      }
    for (int r = 0; r < 5; ++r) launch(which);              // warm-up
    std::vector<float> t(reps);
    for (int r = 0; r < reps; ++r) {
      CHECK(cudaEventRecord(e0));
      launch(which);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaEventElapsedTime(&t[r], e0, e1));
    }
    std::sort(t.begin(), t.end());
    const double ms = t[reps / 2];
    // bytes moved: n floats read + n floats written
    std::printf("%s ok: n=%d, median %.4f ms over %d runs, %.3f TB/s\n", names[which], n, ms, reps,
                2.0 * 4.0 * n / (ms * 1e-3) / 1e12);
  }
  return 0;
}
