#!/usr/bin/env bash
# Tiling and vectorizing matmul_bench.mlir with transform scripts; timing the three programs.
#   bash snippets/mlir_architecture/bench.sh      (from the repository root)
set -euo pipefail
source snippets/mlir_architecture/env.sh

# --8<-- [start:tile]
# apply tile.mlir's transform script, then show @matmul only (main is unchanged)
mlir-opt matmul_bench.mlir \
  --transform-preload-library=transform-library-paths=tile.mlir \
  --transform-interpreter --canonicalize | sed -n '/func.func @matmul/,/^  }/p'
# --8<-- [end:tile]

# --8<-- [start:vectorize]
# the vectorized @matmul (its first 24 lines): 8 rows of C in vector<32xf32> values,
# one vector.fma per row and k step
mlir-opt matmul_bench.mlir \
  --transform-preload-library=transform-library-paths=vectorize.mlir \
  --transform-interpreter --canonicalize | sed -n '/func.func @matmul/,/^  }/p' | awk 'NR <= 24'
# --8<-- [end:vectorize]

# --8<-- [start:time]
LIB=$(dirname "$(command -v mlir-runner)")/../lib
LOWER=(--one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-loops
       --convert-vector-to-scf=full-unroll --expand-strided-metadata --lower-affine
       --convert-scf-to-cf --convert-vector-to-llvm --finalize-memref-to-llvm
       --convert-to-llvm --reconcile-unrealized-casts)
( set -o pipefail   # in a subshell: a failing mlir-opt or mlir-runner ends the block, not your shell
for variant in untiled tile vectorize; do
  transform=()
  [ "$variant" = untiled ] || transform=(
      --transform-preload-library="transform-library-paths=$variant.mlir"
      --transform-interpreter --canonicalize)
  # C[0,0], C[511,511] (both 256) and the seconds one call of @matmul took
  out=$(mlir-opt matmul_bench.mlir "${transform[@]}" "${LOWER[@]}" \
        | mlir-runner -e main -entry-point-result=void -O3 \
            -shared-libs="$LIB/libmlir_c_runner_utils.so") || exit 1
  [ "$(wc -w <<< "$out")" -eq 3 ] || { echo "$variant: expected 3 numbers: $out" >&2; exit 1; }
  echo "$variant" $out
done )
# --8<-- [end:time]
