// C += A·B for 512×512 f32 matrices on tensors; @main times one call with rtclock() (wall seconds).
func.func @matmul(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>, %c: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x512xf32>)
                     outs(%c : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %r : tensor<512x512xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<512x512xf32>
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %b = linalg.fill ins(%half : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %t0 = func.call @rtclock() : () -> f64
  %r = func.call @matmul(%a, %b, %c) : (tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  %i0 = arith.constant 0 : index
  %i511 = arith.constant 511 : index
  %first = tensor.extract %r[%i0, %i0] : tensor<512x512xf32>     // 512 · 1.0 · 0.5 = 256
  %last = tensor.extract %r[%i511, %i511] : tensor<512x512xf32>
  vector.print %first : f32
  vector.print %last : f32
  vector.print %dt : f64
  return
}
func.func private @rtclock() -> f64
