// saxpy.cu: y = a*x + y, the kernel every command on the page compiles.
// The host program reports which machine code the driver picked for the kernel and how long the
// first launch took (module load, plus JIT compilation when only PTX fits this GPU).
//
//   nvcc -arch=sm_90 saxpy.cu -o saxpy -L<toolchain>/lib && ./saxpy
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

// Every CUDA call is checked: a failed launch returns normally and only the error code tells.
#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "saxpy: %s failed: %s (%s)\n", #call, cudaGetErrorString(err_), \
                   cudaGetErrorName(err_));                                              \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// --8<-- [start:kernel]
__global__ void saxpy(int n,                          // number of elements
                      float a,                        // scale factor
                      const float* __restrict__ x,    // input, read once
                      float* __restrict__ y) {        // input and output
  int i = blockIdx.x * blockDim.x + threadIdx.x;      // one element per thread
  if (i < n) y[i] = a * x[i] + y[i];                  // the last block may run past n
}
// --8<-- [end:kernel]

static double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int main() {
  const int n = 1 << 20;
  const float a = 2.5f;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {                       // not zeros: a wrong index must show
    hx[i] = std::sin(0.001f * i);
    hy[i] = std::cos(0.003f * i);
  }
  auto t0 = std::chrono::steady_clock::now();
  CHECK(cudaFree(nullptr));                           // create the context: not part of the launch cost
  double context_ms = ms_since(t0);

  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256, grid = (n + block - 1) / block;
  // First launch: with lazy loading (the default) the driver loads the module here, and
  // JIT-compiles its PTX if no SASS in the binary fits this GPU.
  t0 = std::chrono::steady_clock::now();
  saxpy<<<grid, block>>>(n, a, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  double first_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  saxpy<<<grid, block>>>(n, a, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  double second_ms = ms_since(t0);

  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  double max_err = 0;
  for (int i = 0; i < n; ++i) {                       // two launches: y + 2*a*x
    double ref = double(hy[i]) + 2.0 * a * double(hx[i]);
    max_err = std::fmax(max_err, std::fabs(out[i] - ref));
  }
  if (max_err > 1e-5) {
    std::fprintf(stderr, "saxpy: wrong result, max error %g\n", max_err);
    return 1;
  }
  cudaFuncAttributes attr;                            // which code the driver actually loaded
  CHECK(cudaFuncGetAttributes(&attr, saxpy));
  int dev, major, minor;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  std::printf("saxpy ok: device sm_%d%d, kernel binary sm_%d from ptx compute_%d, "
              "context %.1f ms, first launch %.3f ms, second launch %.3f ms\n",
              major, minor, attr.binaryVersion, attr.ptxVersion, context_ms, first_ms, second_ms);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return 0;
}
