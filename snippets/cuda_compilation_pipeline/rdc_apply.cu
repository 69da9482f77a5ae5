// A kernel that calls a __device__ function defined in another file (rdc_scale.cu). In the default
// whole-program mode ptxas must see every callee, so this file only builds with -rdc=true (-dc).
#include <cstdio>

extern __device__ float scale(float v);

__global__ void apply(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale(y[i]);
}

int main() {  // on a GPU: doubles 256 ones and checks the result
  const int n = 256;
  float h[n], *d;
  for (int i = 0; i < n; ++i) h[i] = 1.0f;
  cudaMalloc(&d, n * sizeof(float));
  cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
  apply<<<1, n>>>(n, d);
  cudaError_t err = cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess || h[0] != 2.0f) {
    std::printf("failed: %s\n", cudaGetErrorName(err));
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
