"""A rewrite pattern written in Python, run by MLIR's own greedy pattern driver.

The MLIR Python bindings (here from the PyPI wheel iree-base-compiler, which ships the
upstream bindings as iree.compiler.ir / .rewrite / .dialects) let a Python function be a
pattern: it gets each matching op and a PatternRewriter, and returns a falsy value when it
rewrote something.

    python snippets/mlir_architecture/rewrite.py
"""
# --8<-- [start:pattern]
from iree.compiler import ir
from iree.compiler.dialects import arith, math
from iree.compiler.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

SOURCE = """
func.func @axpy(%a: f32, %x: f32, %y: f32) -> f32 {
  %p = arith.mulf %a, %x : f32
  %r = arith.addf %p, %y : f32          // a*x + y: one fused multiply-add
  return %r : f32
}
func.func @shared(%a: f32, %x: f32, %y: f32) -> (f32, f32) {
  %p = arith.mulf %a, %x : f32          // the product has a second use:
  %r = arith.addf %p, %y : f32          // fusing would compute it twice
  return %r, %p : f32, f32
}
"""


def fuse_mul_add(add, rewriter):
    """addf(mulf(a, b), c) -> math.fma(a, b, c) when the product has no other use."""
    for product, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        mul = product.owner                   # the op that defines this operand
        if not isinstance(mul, arith.MulFOp):
            continue
        if len(list(product.uses)) != 1:      # the product is needed elsewhere
            continue
        with rewriter.ip, add.location:       # build the new op where the old one is
            fma = math.fma(mul.lhs, mul.rhs, other)
        rewriter.replace_op(add, [fma])
        return False                          # falsy: matched and rewritten
    return True                               # truthy: no match


def fuse(module_text: str) -> str:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(module_text)
        patterns = RewritePatternSet()
        patterns.add(arith.AddFOp, fuse_mul_add)
        # MLIR's greedy driver: applies the patterns, folds, and erases the dead mulf
        apply_patterns_and_fold_greedily(module, patterns.freeze())
        assert module.operation.verify()
        return str(module)
# --8<-- [end:pattern]


# --8<-- [start:run]
print(fuse(SOURCE))
# --8<-- [end:run]


def _test():
    out = fuse(SOURCE)
    axpy, shared = out.split("func.func @shared")
    assert "math.fma %arg0, %arg1, %arg2 : f32" in axpy and "arith.mulf" not in axpy, axpy
    assert "math.fma" not in shared and "arith.addf" in shared, shared
    try:
        fuse("func.func @f() { %x = arith.addf }")
    except ir.MLIRError as e:
        assert "expected" in str(e)
    else:
        raise AssertionError("malformed IR was accepted")


if __name__ == "__main__":
    _test()
