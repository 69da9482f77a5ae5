#!/usr/bin/env bash
# How __launch_bounds__ and -maxrregcount move registers, and what spills look like.
#   bash snippets/cuda_compilation_pipeline/registers.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:registers]
for flags in "" "-DMIN_BLOCKS=6" "-DMIN_BLOCKS=8" "-maxrregcount=24"; do
  echo "== nvcc -arch=sm_90 -Xptxas -v $flags -c registers.cu"
  nvcc -arch=sm_90 -Xptxas -v $flags -c registers.cu -o registers.o 2>&1
  cuobjdump -res-usage registers.o | grep -A1 "Function"          # the same numbers, read from the object
  echo "local-memory instructions in SASS: $(cuobjdump -sass registers.o | grep -c -E 'LDL|STL' || true)"
done
# --8<-- [end:registers]


# --8<-- [start:bounds-ptx]
# __launch_bounds__ reaches ptxas as PTX directives, and wins over -maxrregcount
nvcc -arch=sm_90 -ptx -DMIN_BLOCKS=8 registers.cu -o bounds.ptx
grep -E "^\.(maxntid|minnctapersm)" bounds.ptx
nvcc -arch=sm_90 -Xptxas -v -DMIN_BLOCKS=8 -maxrregcount=24 -c registers.cu -o bounds.o 2>&1 | grep -E "Overriding|Used"
# --8<-- [end:bounds-ptx]

# --8<-- [start:pressure]
# register pressure: nvdisasm -plr prints, beside every instruction, how many registers are live there
for flags in "" "-DMIN_BLOCKS=8"; do
  nvcc -arch=sm_90 $flags -cubin registers.cu -o registers.cubin
  live=$(nvdisasm -plr -c registers.cubin | grep -E '^ +/\*[0-9a-f]{4}\*/' | sed -E 's@.*// \| +([0-9]+) .*@\1@' | sort -n | tail -n 1)
  echo "nvcc -arch=sm_90 $flags: at most $live registers live at once; $(cuobjdump -res-usage registers.cubin | grep -o 'REG:[0-9]*')"
done
# --8<-- [end:pressure]
