"""Attention, the extreme case of fusion: the textbook formula against one fused kernel.

    python snippets/how_ai_compilers_work/attention.py      # needs a CUDA GPU (FlashAttention kernel)

The eager version writes the [batch, heads, seq, seq] score matrix to memory and reads
it back three times; the fused kernel (FlashAttention-2, called through PyTorch's SDPA)
keeps each tile of scores on chip. scripts/measure/how_ai_compilers_work/fusion.py
imports this file for the page's table.
"""
# needs: gpu
# --8<-- [start:attention]
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def attention_eager(q, k, v):                 # q, k, v: [batch, heads, seq, head_dim]
    s = q @ k.transpose(-2, -1)               # [B, H, N, N] scores, written to memory
    s = s * (1.0 / math.sqrt(q.shape[-1]))    # read and written again
    p = torch.softmax(s, dim=-1)              # and again
    return p @ v                              # read once more


def attention_fused(q, k, v):                 # one kernel: FlashAttention-2 inside PyTorch
    if q.device.type != "cuda" or not q.device == k.device == v.device:
        raise ValueError(f"the FlashAttention backend needs q, k, v on one GPU, got {q.device}, {k.device}, {v.device}")
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"the FlashAttention backend takes float16 or bfloat16, got {q.dtype}")
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)
    except RuntimeError as e:                 # SDPA gives its reasons as warnings, then this error
        if "No available kernel" not in str(e):
            raise
        raise ValueError(f"the FlashAttention backend cannot take q {tuple(q.shape)}, k {tuple(k.shape)}, "
                         f"v {tuple(v.shape)}; PyTorch's warnings above say which check failed") from e


def attention_traffic(B, H, N, D, elem=2):
    """Bytes (unfused, fused): every tensor counted once per kernel that reads or writes it."""
    qkv, nn = B * H * N * D, B * H * N * N
    unfused = (2 * qkv + nn) + 2 * nn + 2 * nn + (nn + qkv + qkv)   # QK^T, scale, softmax, PV
    fused = 4 * qkv                                                  # read Q, K, V; write O
    return unfused * elem, fused * elem


def attention_flops(B, H, N, D):
    return 4 * B * H * N * N * D              # two matrix products of 2*N*N*D each
# --8<-- [end:attention]


if __name__ == "__main__":
    if not torch.cuda.is_available():
        raise SystemExit("attention.py: needs a CUDA GPU (the fused version is SDPA's FlashAttention kernel)")
    # --8<-- [start:attention-run]
    from triton.testing import do_bench

    B, H, N, D = 1, 16, 4096, 128
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
    ref = attention_eager(q.float(), k.float(), v.float())
    unfused, fused = attention_traffic(B, H, N, D)
    print(f"bytes: unfused {unfused / 1e9:.2f} GB, fused {fused / 1e9:.3f} GB")
    for name, fn in (("eager", attention_eager), ("fused", attention_fused)):
        out = fn(q, k, v)
        err = ((out.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, f"{name}: relative error {err:.1e}"
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn(q, k, v)
        torch.cuda.synchronize()
        extra = (torch.cuda.max_memory_allocated() - base) / 2**20
        ms = do_bench(lambda: fn(q, k, v), return_mode="median")
        print(f"{name:<5} {ms:7.3f} ms  {attention_flops(B, H, N, D) / ms / 1e9:5.0f} TFLOP/s  "
              f"extra memory {extra:7.1f} MiB  error {err:.1e}")
    # --8<-- [end:attention-run]
