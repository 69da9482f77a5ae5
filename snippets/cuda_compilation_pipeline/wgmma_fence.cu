// One Hopper-only instruction, wgmma.fence, issued through inline PTX. Compiled with -DGUARDED,
// it sits behind __CUDA_ARCH_FEAT_SM90_ALL, which only a compute_90a compilation pass defines.
__global__ void hopper_fence() {
#if !defined(GUARDED) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
