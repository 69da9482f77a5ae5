// Calls @mlp (from mlp.mlir: `cat mlp.mlir main.mlir`) on fixed inputs and prints both results.
func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 0.5], [0.0, 1.0, 2.0], [-1.0, -1.0, -1.0], [3.0, 0.25, -0.5]]> : tensor<4x3xf32>
  %w = arith.constant dense<[[0.5, -1.0], [1.5, 2.0], [-2.0, 0.75]]> : tensor<3x2xf32>
  %relu, %sum = func.call @mlp(%x, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<4xf32>)
  %r = bufferization.to_buffer %relu : tensor<4x2xf32> to memref<4x2xf32>
  %s = bufferization.to_buffer %sum : tensor<4xf32> to memref<4xf32>
  %r_any = memref.cast %r : memref<4x2xf32> to memref<*xf32>
  %s_any = memref.cast %s : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%r_any) : (memref<*xf32>) -> ()
  call @printMemrefF32(%s_any) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
