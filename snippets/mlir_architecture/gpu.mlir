// x[i] *= a on a GPU: 4 blocks of 256 threads, each thread one element (gpu dialect, no GPU needed).
func.func @scale(%x: memref<1024xf32>, %a: f32) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c256 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %x[%i] : memref<1024xf32>
    %r = arith.mulf %v, %a : f32
    memref.store %r, %x[%i] : memref<1024xf32>
    gpu.terminator
  }
  return
}
