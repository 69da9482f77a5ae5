"""The forward pass of attention.py, step by step: what TMA descriptors and software pipelining add.

Step 1, "pointers": the tutorial-level kernel, each tile of K and V loaded with tl.load from a block of
pointers (masked at the ragged tail). Step 2, "tma_serial": the page's kernel (attn_fwd, TMA
descriptors) with num_stages=1, so each iteration waits for its own tiles. Step 3, "tma": the page's
kernel with its tuned num_stages, the loads of the next tiles in flight during this tile's math.
Full (non-causal) attention, the same online softmax in every step.
It imports attention.py from its own directory. Run it: `python snippets/triton_deep_dive/attention_steps.py`
on a Hopper GPU, or with TRITON_INTERPRET=1 on a CPU (small sizes).
"""
# --8<-- [start:pointers]
import torch
import triton
import triton.language as tl

import attention as fa    # attention.py, the file of the blocks above, in the same directory


@triton.jit
def attn_fwd_pointers(Q, K, V, O,            # (B, H, N, D), unit stride along D; full attention, Hq = Hkv
                      sq_b, sq_h, sq_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n, so_b, so_h, so_n,
                      H, N_CTX, qk_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    b = (tl.program_id(1) // H).to(tl.int64)
    h = (tl.program_id(1) % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    # every tile is addressed element by element: a (rows, HEAD_DIM) block of pointers
    q = tl.load(Q + b * sq_b + h * sq_h + offs_m[:, None] * sq_n + offs_d[None, :],
                mask=offs_m[:, None] < N_CTX, other=0.0)
    k_ptrs = K + b * sk_b + h * sk_h + offs_n[:, None] * sk_n + offs_d[None, :]
    v_ptrs = V + b * sv_b + h * sv_h + offs_n[:, None] * sv_n + offs_d[None, :]
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        live = (start_n + offs_n) < N_CTX
        k = tl.load(k_ptrs + start_n * sk_n, mask=live[:, None], other=0.0)
        s = tl.dot(q, k.T) * qk_scale
        s = tl.where(live[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * sv_n, mask=live[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(O + b * so_b + h * so_h + offs_m[:, None] * so_n + offs_d[None, :],
             (acc / l_i[:, None]).to(O.dtype.element_ty), mask=offs_m[:, None] < N_CTX)
# --8<-- [end:pointers]


# --8<-- [start:steps]
STEPS = ("pointers", "tma_serial", "tma")


def forward_step(q, k, v, step: str, scale=None):
    """Full attention forward of one step; q, k, v (B, H, N, D) with the same number of heads."""
    if step not in STEPS:
        raise ValueError(f"forward_step: step must be one of {STEPS}, got {step!r}")
    fa._check_inputs(q, k, v)
    if q.shape[1] != k.shape[1]:
        raise ValueError("forward_step: the step kernels take Hq = Hkv (no grouped-query heads)")
    B, H, N, D = q.shape
    scale = D ** -0.5 if scale is None else scale
    dtype = q.dtype
    # unit stride along D (the kernels assume it) and the TMA layout rules, as attention() does
    q, k, v = (fa._tma_ready(t) for t in (q, k, v))
    if fa.INTERPRET and dtype == torch.bfloat16:
        q, k, v = q.float(), k.float(), v.float()        # the interpreter's tl.dot mishandles bf16
    cfg = dict(fa.FWD_CONFIGS[(D, False)])               # the same tiles and warps in every step
    if fa.INTERPRET:
        cfg.update(BLOCK_M=16, BLOCK_N=16)
    if step == "pointers":
        o = torch.empty_like(q)
        grid = (triton.cdiv(N, cfg["BLOCK_M"]), B * H)
        attn_fwd_pointers[grid](q, k, v, o, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                                H, N, scale * fa.LOG2E, HEAD_DIM=D, **cfg)
        return o.to(dtype)
    if step == "tma_serial":
        cfg["num_stages"] = 1
    if not fa.INTERPRET:
        triton.set_allocator(fa._alloc)                   # scratch memory for the TMA descriptors
    o = torch.empty_like(q)
    lse = torch.empty((B, H, N), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(N, cfg["BLOCK_M"]), B * H)
    fa.attn_fwd[grid](q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                      H, 1, N, scale * fa.LOG2E, HEAD_DIM=D, CAUSAL=False, **cfg)
    return o.to(dtype)
# --8<-- [end:steps]


# --8<-- [start:check]
if __name__ == "__main__":
    if fa.DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("attention_steps.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    torch.manual_seed(0)
    for N, D in ((37, 64), (70, 128)) if fa.INTERPRET else ((1000, 64), (4096, 128)):
        q, k, v = (torch.randn(2, 2, N, D, device=fa.DEVICE, dtype=torch.float16) for _ in range(3))
        ref = fa.reference(q, k, v)
        for step in STEPS:
            err = fa.rel_err(forward_step(q, k, v, step), ref)
            assert err < 5e-3, (step, N, D, err)
    print("attention steps: pointer loads, TMA without and with pipelining, all match the fp32 reference")
# --8<-- [end:check]
