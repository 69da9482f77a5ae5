#!/usr/bin/env bash
# Commands the page "PyTorch Compile Stack" shows; each section is one block.
# --8<-- [start:graph_break_log]
# the logs go to stderr: keep them in a file, so that a failing script shows its error
log=$(mktemp)
TORCH_LOGS=graph_breaks python snippets/pytorch_compile_stack/graph_break.py >/dev/null 2>"$log" || cat "$log"
grep -o "Graph Break Reason: .*" "$log" | sort | uniq -c
# --8<-- [end:graph_break_log]
# --8<-- [start:measure]
# on a CUDA machine (the H200 numbers; about six minutes)
python scripts/measure/pytorch_compile_stack/gpu_workloads.py
python scripts/measure/pytorch_compile_stack/_artifacts.py --device cuda
# on the CPU (timings: measured once and committed; CI does not re-time them)
python scripts/measure/pytorch_compile_stack/cpu_workloads.py
python scripts/measure/pytorch_compile_stack/cpu_production.py
# the CPU artifacts, exactly as CI regenerates and compares them
python scripts/measure/pytorch_compile_stack/_artifacts.py --device cpu
python -m pytest -q tests/test_pytorch_compile_stack.py
# --8<-- [end:measure]
