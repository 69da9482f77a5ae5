// One module, two functions: ops, regions, blocks, SSA values, block arguments, attributes, types.
module {
  // @sum is a symbol in the module's symbol table; callers refer to it by name
  func.func @sum(%n: index, %init: f32) -> f32 {
    %c0 = arith.constant 0 : index              // attribute `0`, result type `index`
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    cf.br ^loop(%c0, %init : index, f32)        // jump, passing values to the block's arguments
  ^loop(%i: index, %acc: f32):                  // block arguments: where LLVM IR has phi nodes
    %done = arith.cmpi sge, %i, %n : index
    cf.cond_br %done, ^exit, ^body
  ^body:
    %next = arith.addf %acc, %one fastmath<contract> : f32
    %i1 = arith.addi %i, %c1 : index
    cf.br ^loop(%i1, %next : index, f32)
  ^exit:
    return %acc : f32
  }

  func.func @caller() -> f32 {
    %n = arith.constant 4 : index
    %x = arith.constant 0.5 : f32
    %r = func.call @sum(%n, %x) : (index, f32) -> f32   // a symbol reference
    return %r : f32
  }
}
