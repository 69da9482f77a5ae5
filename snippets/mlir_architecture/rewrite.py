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
  %p = arith.mulf %a, %x fastmath<contract> : f32   // contract on both ops: their two
  %r = arith.addf %p, %y fastmath<contract> : f32   // roundings may become one (an fma)
  return %r : f32
}
func.func @shared(%a: f32, %x: f32, %y: f32) -> (f32, f32) {
  %p = arith.mulf %a, %x fastmath<contract> : f32   // also returned: the mulf has to stay,
  %r = arith.addf %p, %y fastmath<contract> : f32   // so an fma would save no operation
  return %r, %p : f32, f32
}
"""


def contracts(op) -> bool:
    """Whether op's fastmath flags allow contraction: `contract`, or `fast`, which includes it."""
    flags = str(op.fastmath).removeprefix("#arith.fastmath<").removesuffix(">")
    return bool({"contract", "fast"} & set(flags.split(",")))


def fuse_mul_add(add, rewriter):
    """addf(mulf(a, b), c) -> math.fma(a, b, c). An fma rounds once where mulf + addf round
    twice, so the result may differ: only where both ops allow contraction, and only when
    the product has no other use."""
    if not contracts(add):
        return True                           # truthy: no match (strict addition)
    for product, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        mul = product.owner                   # the op that defines this operand
        if not isinstance(mul, arith.MulFOp) or not contracts(mul):
            continue
        if len(list(product.uses)) != 1:      # used elsewhere too: the mulf would stay
            continue
        with rewriter.ip, add.location:       # build the new op where the old one is
            fma = math.fma(mul.lhs, mul.rhs, other, fastmath=arith.FastMathFlags.contract)
        rewriter.replace_op(add, [fma])
        return False                          # falsy: matched and rewritten
    return True


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
    assert "math.fma %arg0, %arg1, %arg2 fastmath<contract> : f32" in axpy, axpy
    assert "arith.mulf" not in axpy, axpy
    assert "math.fma" not in shared and "arith.addf" in shared, shared
    # without the flag on both ops nothing is fused; `fast` includes contract
    strict = SOURCE.replace(" fastmath<contract>", "")
    mul_strict = SOURCE.replace("%x fastmath<contract>", "%x")
    for text in (strict, mul_strict):
        assert "math.fma" not in fuse(text), fuse(text)
    assert "math.fma" in fuse(SOURCE.replace("fastmath<contract>", "fastmath<fast>"))
    try:
        fuse("func.func @f() { %x = arith.addf }")
    except ir.MLIRError as e:
        assert "expected" in str(e)
    else:
        raise AssertionError("malformed IR was accepted")


if __name__ == "__main__":
    _test()
