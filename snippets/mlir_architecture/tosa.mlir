// The same layer as mlp.mlir, written in TOSA, the op set of framework importers (TFLite, ONNX, torch).
// TOSA's matmul is batched (3-d) and takes explicit zero points for quantized inputs.
func.func @layer(%x: tensor<1x4x3xf32>, %w: tensor<1x3x2xf32>) -> tensor<1x4x2xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x3xf32>, tensor<1x3x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x2xf32>
  %relu = tosa.clamp %mm {min_val = 0.0 : f32, max_val = 3.40282347E+38 : f32} : (tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  return %relu : tensor<1x4x2xf32>
}
