"""A read of a tensor and nothing more: a reference for a kernel whose traffic is one pass over a weight.

A GEMM at M <= 16 reads the weight once and writes a few kilobytes, so the device copy (read and write
in equal parts) is not quite the right yardstick for it. A plain read is a closer one, though not an upper
bound: this is a simple kernel in two untuned settings, and a tuned GEMM may stream the weight faster.
read_sum_kernel reads the tensor in contiguous blocks of BLOCK elements per program (16-byte loads) and
writes one fp32 sum per program, so the loads cannot be dropped; what it writes is 4 / (BLOCK * element
size) of what it reads. read_calls gives one call for each of two block sizes; inference_gemm.py times
both and keeps the faster.
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
    """{label: zero-argument call} reading every element of contiguous t once, each checked first: every
    block's sum must match torch's sum of the same elements."""
    import torch

    if not t.is_contiguous():
        raise ValueError(f"read_calls: needs a contiguous tensor, got strides {t.stride()}")
    flat = t.reshape(-1)
    n = flat.numel()
    calls = {}
    for block, warps in SETTINGS:
        blocks = triton.cdiv(n, block)
        out = torch.empty(blocks, device=t.device, dtype=torch.float32)

        def call(out=out, block=block, warps=warps):
            read_sum_kernel[(out.numel(),)](flat, out, n, BLOCK=block, num_warps=warps)
            return out

        # every block's sum against torch's, so a block skipped or read twice fails here
        ref = torch.nn.functional.pad(flat.float(), (0, blocks * block - n)).view(blocks, block)
        err = (call() - ref.sum(dim=1)).abs() - 1e-5 * ref.abs().sum(dim=1) - 1e-6
        if err.max().item() > 0:
            bad = int(err.argmax())
            raise RuntimeError(f"read_sum_kernel BLOCK={block}: block {bad} sums to {out[bad].item()}, "
                               f"torch to {ref[bad].sum().item()}")
        calls[f"read {block}"] = call
    return calls
