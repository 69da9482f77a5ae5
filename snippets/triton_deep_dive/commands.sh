#!/usr/bin/env bash
# Commands the page "Deep Dive into OpenAI Triton" shows; each section is one block.
# --8<-- [start:gpu_checks]
python snippets/triton_deep_dive/attention.py     # 8 ragged shapes: D 64, 128, 256, both masks, GQA, fp16 and bf16, vs fp32
python snippets/triton_deep_dive/attention_gluon.py  # attention() with the Gluon forward (Hopper only), gradients included
python snippets/triton_deep_dive/attention_bwd_gluon.py  # the Gluon backward kernels' gradients (Hopper only)
python snippets/triton_deep_dive/attention_varlen.py  # packed batches: 7 lengths (one empty), GQA, D 64, 128, 256, keys apart, vs fp32
python snippets/triton_deep_dive/lbm.py           # Triton step = PyTorch step on larger grids, Taylor-Green n=64
# --8<-- [end:gpu_checks]
# --8<-- [start:cavity]
python snippets/triton_deep_dive/solve.py --case cavity --re 100 --n 32 --tol 1e-6
# --8<-- [end:cavity]
# --8<-- [start:refuse]
python snippets/triton_deep_dive/solve.py --case cavity --re 1000 --n 32 2>&1 || echo "exit status $?"
# --8<-- [end:refuse]
# --8<-- [start:lbm_3d]
python snippets/triton_deep_dive/lbm_3d.py        # about 5 s on a CPU (the PyTorch step), less on a GPU
# --8<-- [end:lbm_3d]
# --8<-- [start:measure]
python scripts/measure/triton_deep_dive/attention.py      # about a minute on the H200
python scripts/measure/triton_deep_dive/lbm_speed.py      # includes two torch.compile builds
python scripts/measure/triton_deep_dive/cavity.py
python scripts/measure/triton_deep_dive/attention_varlen.py  # packed batches against SDPA per sequence
# --8<-- [end:measure]
