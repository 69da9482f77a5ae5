// What generic passes know from traits and interfaces alone, without knowing the ops.
func.func @effects(%a: f32, %buf: memref<4xf32>) -> f32 {
  %i = arith.constant 1 : index
  %dead = arith.mulf %a, %a : f32          // reports no memory effects, unused: erased
  %x = arith.addf %a, %a : f32
  %y = arith.addf %a, %a : f32             // same op and operands, no effects: CSE merges it into %x
  memref.store %x, %buf[%i] : memref<4xf32> // writes memory (MemoryEffectOpInterface): kept
  %z = arith.mulf %y, %x : f32
  return %z : f32
}
