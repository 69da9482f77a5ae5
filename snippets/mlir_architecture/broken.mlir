// Three hand-broken functions, one per chunk (mlir-opt --split-input-file checks each on its own).

// A value used before the op that defines it: SSA dominance is violated.
func.func @use_before_def(%a: f32) -> f32 {
  %y = arith.mulf %x, %a : f32
  %x = arith.addf %a, %a : f32
  return %y : f32
}

// -----

// The function says it returns f32; its terminator returns an i32.
func.func @wrong_return(%a: i32) -> f32 {
  return %a : i32
}

// -----

// A call to a symbol the module's symbol table does not have.
func.func @bad_call(%a: f32) -> f32 {
  %r = func.call @missing(%a) : (f32) -> f32
  return %r : f32
}
