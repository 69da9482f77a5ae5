#!/usr/bin/env bash
# The lowering pipeline of the page "MLIR Architecture", one stage per section;
# each section's command repeats the passes before it, so that every block runs on its own from mlp.mlir.
#   bash snippets/mlir_architecture/pipeline.sh      (from the repository root)
set -euo pipefail
source snippets/mlir_architecture/env.sh

# --8<-- [start:bufferized]
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries
# --8<-- [end:bufferized]

# --8<-- [start:loops]
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops
# --8<-- [end:loops]

# --8<-- [start:affine]
# the same step into the affine dialect: bounds and subscripts are affine in the loop indices
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-affine-loops
# --8<-- [end:affine]

# --8<-- [start:cf]
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf
# --8<-- [end:cf]

# --8<-- [start:llvm]
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf \
  --expand-strided-metadata --finalize-memref-to-llvm \
  --convert-to-llvm --reconcile-unrealized-casts
# --8<-- [end:llvm]

# --8<-- [start:llvmir]
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf \
  --expand-strided-metadata --finalize-memref-to-llvm \
  --convert-to-llvm --reconcile-unrealized-casts \
  | mlir-translate --mlir-to-llvmir
# --8<-- [end:llvmir]

# --8<-- [start:run]
# main.mlir calls @mlp on fixed inputs and prints both results; mlir-runner JIT-compiles it
LIB=$(dirname "$(command -v mlir-runner)")/../lib   # the runtime library of the print calls
cat mlp.mlir main.mlir \
  | mlir-opt --one-shot-bufferize=bufferize-function-boundaries \
      --convert-linalg-to-loops --convert-scf-to-cf \
      --expand-strided-metadata --finalize-memref-to-llvm \
      --convert-to-llvm --reconcile-unrealized-casts \
  | mlir-runner -e main -entry-point-result=void \
      -shared-libs="$LIB/libmlir_runner_utils.so,$LIB/libmlir_c_runner_utils.so" \
  | grep -v '^Unranked Memref'   # drop the header: it holds a heap address that changes
# --8<-- [end:run]

# --8<-- [start:dump-pipeline]
# the pipeline as the pass manager sees it (with every option's value), without running it
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf \
  --expand-strided-metadata --finalize-memref-to-llvm \
  --convert-to-llvm --reconcile-unrealized-casts \
  --dump-pass-pipeline -o /dev/null 2>&1
# --8<-- [end:dump-pipeline]

# --8<-- [start:after-all]
# the IR after every pass goes to stderr; here only each dump's header line and length
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf \
  --expand-strided-metadata --finalize-memref-to-llvm \
  --convert-to-llvm --reconcile-unrealized-casts \
  --mlir-print-ir-after-all -o /dev/null 2>&1 \
  | awk '/IR Dump After/ { if (name) print n " lines  " name; name = $0; n = 0; next }
         { n++ } END { print n " lines  " name }'
# --8<-- [end:after-all]

# --8<-- [start:timing]
# wall time per pass (numbers change from run to run)
mlir-opt mlp.mlir --one-shot-bufferize=bufferize-function-boundaries \
  --convert-linalg-to-loops --convert-scf-to-cf \
  --expand-strided-metadata --finalize-memref-to-llvm \
  --convert-to-llvm --reconcile-unrealized-casts \
  --mlir-timing -o /dev/null 2>&1
# --8<-- [end:timing]
