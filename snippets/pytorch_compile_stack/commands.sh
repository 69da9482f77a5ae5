#!/usr/bin/env bash
# Commands the page "PyTorch Compile Stack" shows; each section is one block.
# --8<-- [start:graph_break_log]
# the logs go to stderr: keep them in a file, so that a failing script shows its error
log=$(mktemp)
TORCH_LOGS=graph_breaks python snippets/pytorch_compile_stack/graph_break.py >/dev/null 2>"$log" || cat "$log"
grep -o "Graph Break Reason: .*" "$log" | sort | uniq -c
# --8<-- [end:graph_break_log]
# --8<-- [start:measure]
# one producer per dataset: scripts/measure/pytorch_compile_stack/X.py writes data/pytorch_compile_stack/X.json
# (--help says what each measures; --out PATH writes elsewhere)
# on a CUDA machine (the H200 figures, torch 2.11); each takes minutes
python scripts/measure/pytorch_compile_stack/gpu_workloads.py           # default and reduce-overhead
python scripts/measure/pytorch_compile_stack/gpu_autotune.py            # max-autotune
python scripts/measure/pytorch_compile_stack/gpt2_profile.py            # inside the GPT-2 block
python scripts/measure/pytorch_compile_stack/call_overhead_gpu.py       # host time per call
python scripts/measure/pytorch_compile_stack/gpu_artifacts.py           # FX, ATen, IR, Triton under ir/cuda
python scripts/measure/pytorch_compile_stack/cpu_artifacts_torch211.py  # CPU artifacts with torch 2.11
# on the CPU (timings: measured once and committed; CI does not re-time them)
python scripts/measure/pytorch_compile_stack/cpu_workloads.py
python scripts/measure/pytorch_compile_stack/cpu_production.py          # dynamic shapes, regional, caches, AOTInductor
python scripts/measure/pytorch_compile_stack/call_overhead.py
# the CPU artifacts under ir/cpu (torch 2.13), which CI regenerates and compares
python scripts/measure/pytorch_compile_stack/cpu_artifacts.py
python -m pytest -q tests/test_pytorch_compile_stack.py
# --8<-- [end:measure]
