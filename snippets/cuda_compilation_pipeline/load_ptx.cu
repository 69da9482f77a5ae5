// load_ptx.cu: hand a PTX file to the driver's JIT compiler at run time and launch saxpy from it.
// It shows what the driver says about PTX it cannot compile: a .version newer than it knows is
// refused with cudaErrorUnsupportedPtxVersion. On the H200 the refusal came from the first call
// that needed the code in the context (cudaLibraryGetKernel), not from cudaLibraryLoadData.
//
//   nvcc -arch=sm_90 load_ptx.cu -o load_ptx -L<toolchain>/lib && ./load_ptx saxpy.ptx
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

static const char* kKernel = "_Z5saxpyifPKfPf";   // saxpy's mangled name in saxpy.ptx

static int fail(const char* what, cudaError_t err, const char* log) {
  std::printf("%s: %s (%s)\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
  if (log && *log) std::printf("JIT log: %s\n", log);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_ptx FILE.ptx  (PTX text that defines %s)\n", kKernel);
    return 2;
  }
  std::ifstream f(argv[1]);
  if (!f) {
    std::fprintf(stderr, "load_ptx: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string ptx = ss.str();
  const size_t at = ptx.find(".version");
  const std::string version = at == std::string::npos ? "?" : ptx.substr(at + 9, ptx.find('\n', at) - at - 9);
  std::printf("%s: PTX ISA %s\n", argv[1], version.c_str());

  setenv("CUDA_MODULE_LOADING", "EAGER", 1);   // ask for code to be loaded when created, not at first use
  cudaError_t err = cudaFree(nullptr);
  if (err != cudaSuccess) return fail("context", err, nullptr);

  // --8<-- [start:load]
  char error_log[4096] = "";
  cudaJitOption opts[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes, cudaJitWallTime};
  void* vals[] = {error_log, reinterpret_cast<void*>(sizeof(error_log)), nullptr};
  cudaLibrary_t lib;
  err = cudaLibraryLoadData(&lib, ptx.c_str(), opts, vals, 3, nullptr, nullptr, 0);
  if (err != cudaSuccess) return fail("cudaLibraryLoadData", err, error_log);
  cudaKernel_t kernel;                                // the first call that needs the compiled code
  err = cudaLibraryGetKernel(&kernel, lib, kKernel);
  if (err != cudaSuccess) return fail("cudaLibraryGetKernel", err, error_log);
  float wall_ms;                                      // the driver writes its JIT time into the slot itself
  std::memcpy(&wall_ms, &vals[2], sizeof(float));
  // --8<-- [end:load]
  std::printf("loaded: JIT compiled in %.2f ms (driver's wall time)\n", wall_ms);

  int n = 1 << 16;
  float a = 3.0f;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) { hx[i] = std::sin(0.01f * i); hy[i] = std::cos(0.02f * i); }
  float *x, *y;
  if ((err = cudaMalloc(&x, n * sizeof(float))) != cudaSuccess) return fail("cudaMalloc", err, nullptr);
  if ((err = cudaMalloc(&y, n * sizeof(float))) != cudaSuccess) return fail("cudaMalloc", err, nullptr);
  cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  void* args[] = {&n, &a, &x, &y};
  err = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3((n + 255) / 256), dim3(256), args, 0, nullptr);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return fail("launch", err, nullptr);
  std::vector<float> out(n);
  cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i)
    if (std::fabs(out[i] - (a * hx[i] + hy[i])) > 1e-5f) {
      std::printf("saxpy from %s: wrong result at %d\n", argv[1], i);
      return 1;
    }
  std::printf("saxpy from %s: ok\n", argv[1]);
  return 0;
}
