// Transform script: tile the matmul into 8×32×8 blocks, vectorize the function's tiles into
// vector.contract, then lower each contraction to outer products: a column of A broadcast times a
// 32-wide row of B, added into a row of the 8×32 C tile (vector.fma on vector<32xf32>). The C tile
// is read (vector.transfer_read) and written back (vector.transfer_write) at every k step of 8:
// nothing here hoists it out of the k loop to keep it in registers.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %mm tile_sizes [8, 32, 8]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %f = transform.get_parent_op %tiled {op_name = "func.func"} : (!transform.any_op) -> !transform.any_op
    %vf = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %vf {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
