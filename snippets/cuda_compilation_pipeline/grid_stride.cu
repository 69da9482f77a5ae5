// grid_stride.cu: saxpy with a grid-stride loop, so that its control-flow graph has a loop in it.
// A fixed grid covers any n: each thread strides by the total number of threads.
//
//   nvcc -arch=sm_90 -cubin grid_stride.cu -o grid_stride.cubin && nvdisasm -bbcfg grid_stride.cubin
// --8<-- [start:kernel]
__global__ void saxpy_grid_stride(int n,                        // number of elements
                                  float a,                      // scale factor
                                  const float* __restrict__ x,  // input
                                  float* __restrict__ y) {      // input and output
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
// --8<-- [end:kernel]
