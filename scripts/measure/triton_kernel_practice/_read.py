"""A read of a tensor and nothing more: the ceiling for a kernel whose traffic is one pass over a weight.

A GEMM at M <= 16 reads the weight once and writes a few kilobytes, so the device copy (read and write
in equal parts) is not quite its ceiling. read_sum_kernel reads the tensor in contiguous blocks of BLOCK
elements per program (16-byte loads) and writes one fp32 sum per program, so the loads cannot be
dropped; what it writes is 4 / (BLOCK * element size) of what it reads. read_calls gives one call for each of two
block sizes; inference_gemm.py times both and keeps the faster.
"""
from __future__ import annotations

import triton
import triton.language as tl

SETTINGS = ((8192, 8), (16384, 16))   # (BLOCK elements per program, num_warps)


@triton.jit
def read_sum_kernel(src, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(src + offs, mask=offs < n, other=0.0)
    tl.store(out + pid, tl.sum(v.to(tl.float32), axis=0))


def read_calls(t) -> dict:
    """{label: zero-argument call} reading every element of contiguous t once, each checked first: the
    partial sums add up to t's sum."""
    import torch

    if not t.is_contiguous():
        raise ValueError(f"read_calls: needs a contiguous tensor, got strides {t.stride()}")
    flat = t.reshape(-1)
    n = flat.numel()
    ref, scale = flat.float().sum().item(), flat.float().abs().sum().item()
    calls = {}
    for block, warps in SETTINGS:
        out = torch.empty(triton.cdiv(n, block), device=t.device, dtype=torch.float32)

        def call(out=out, block=block, warps=warps):
            read_sum_kernel[(out.numel(),)](flat, out, n, BLOCK=block, num_warps=warps)
            return out

        got = call().sum().item()
        if abs(got - ref) > 1e-5 * scale:          # fp32 sums in another order
            raise RuntimeError(f"read_sum_kernel BLOCK={block}: sum {got} against {ref}")
        calls[f"read {block}"] = call
    return calls
