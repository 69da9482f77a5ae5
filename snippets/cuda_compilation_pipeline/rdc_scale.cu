// The callee of rdc_apply.cu, in its own translation unit.
__device__ float scale(float v) { return 2.0f * v; }
