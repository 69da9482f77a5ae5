// A matmul, an elementwise ReLU and a row-sum reduction, on tensors (values, no memory yet).
func.func @mlp(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                      outs(%acc : tensor<4x2xf32>) -> tensor<4x2xf32>
  %relu = linalg.map ins(%mm : tensor<4x2xf32>) outs(%e : tensor<4x2xf32>)
    (%v: f32, %unused: f32) {
      %m = arith.maximumf %v, %zero : f32
      linalg.yield %m : f32
    }
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%relu : tensor<4x2xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
    (%in: f32, %s: f32) {
      %a = arith.addf %in, %s : f32
      linalg.yield %a : f32
    }
  return %relu, %sum : tensor<4x2xf32>, tensor<4xf32>
}
