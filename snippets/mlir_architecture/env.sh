# MLIR 22 tools (requirements-mlir.txt) on PATH, then to the page's .mlir files; if tools.py finds
# no MLIR 22 it says why, and nothing is changed (no exit: a pasted block must not close the terminal).
# Safe to paste again: an earlier block may already have left you in snippets/mlir_architecture.
[ -f tools.py ] && [ -f env.sh ] && cd ../..
MLIR_TOOLS=$(python3 snippets/mlir_architecture/tools.py) && export PATH="$MLIR_TOOLS:$PATH" &&
  cd snippets/mlir_architecture
