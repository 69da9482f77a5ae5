#!/usr/bin/env bash
# Every command of the page "MLIR Architecture", section by section
# (each page block is env.sh + one section). From the repository root:
#   bash snippets/mlir_architecture/commands.sh
set -euo pipefail
source snippets/mlir_architecture/env.sh

# --8<-- [start:version]
mlir-opt --version
# --8<-- [end:version]

# --8<-- [start:custom]
mlir-opt basics.mlir              # parse, verify, print back in the custom (pretty) form
# --8<-- [end:custom]

# --8<-- [start:generic]
mlir-opt basics.mlir --mlir-print-op-generic  # the same IR in the one form every op has
# --8<-- [end:generic]

# --8<-- [start:verify]
# three broken functions, each checked on its own; diagnostics go to stderr
mlir-opt broken.mlir --split-input-file 2>&1 >/dev/null || echo "mlir-opt exit status: $?"
# --8<-- [end:verify]

# --8<-- [start:effects]
mlir-opt effects.mlir --canonicalize --cse
# --8<-- [end:effects]

# --8<-- [start:tosa-fail]
# TOSA -> linalg: the elementwise pass alone has no pattern for tosa.matmul
mlir-opt tosa.mlir --pass-pipeline='builtin.module(func.func(tosa-to-linalg))' \
  2>&1 >/dev/null || echo "mlir-opt exit status: $?"
# --8<-- [end:tosa-fail]

# --8<-- [start:tosa-ok]
# the named-op pass first (matmul -> linalg.batch_matmul), then the elementwise one
# (clamp -> linalg.generic), then tosa-to-arith (the tosa.const the other two leave
# -> arith.constant); canonicalize erases that constant, which nothing uses any more
mlir-opt tosa.mlir --pass-pipeline='builtin.module(
    func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith),canonicalize)'
# --8<-- [end:tosa-ok]

# --8<-- [start:gpu]
# outline the gpu.launch body into a kernel in a gpu.module, then lower it to llvm + nvvm
mlir-opt gpu.mlir \
  --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm))'
# --8<-- [end:gpu]

# --8<-- [start:triton-dump]
# every pass triton.compile runs, in order: MLIR_ENABLE_DUMP=1 prints the IR before each
# one on stderr (TRITON_ALWAYS_COMPILE=1: compile even if the kernel is in the cache)
TRITON_ALWAYS_COMPILE=1 MLIR_ENABLE_DUMP=1 python3 triton_stages.py 2>&1 >/dev/null \
  | grep -oE "IR Dump Before [A-Za-z0-9]+ \([A-Za-z0-9-]+\)" | cut -d' ' -f4- \
  | awk '{ printf "%2d %s\n", NR, $0 }'
# --8<-- [end:triton-dump]
