"""Experiment (not committed): TMA split-K kernel for inference GEMMs at M = 16..128."""
import sys, itertools, time
import torch, triton, triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
sys.path.insert(0, "scripts")
from sitekit import measure


@triton.jit(do_not_specialize=["M", "split_tiles"])
def tma_kernel(x_desc, w_desc, y_ptr, ws_ptr, cnt_ptr, M, N, K, split_tiles, stride_ym,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               SWAP_AB: tl.constexpr, SPLIT: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = pid // num_n, pid % num_n
    k_lo = pid_k * split_tiles * BLOCK_K
    k_hi = tl.minimum(K, k_lo + split_tiles * BLOCK_K)
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(k_lo, k_hi, BLOCK_K, num_stages=STAGES):
        x = x_desc.load([pid_m * BLOCK_M, k])
        w = w_desc.load([pid_n * BLOCK_N, k])
        if SWAP_AB:
            acc = tl.dot(w, x.T, acc)
        else:
            acc = tl.dot(x, w.T, acc)
    if SWAP_AB:
        acc = tl.trans(acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    if SPLIT:
        n_split = tl.num_programs(1)
        tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        ws_tile = ws_ptr + pid.to(tl.int64) * n_split * BLOCK_M * BLOCK_N
        tl.store(ws_tile + pid_k * BLOCK_M * BLOCK_N + tile, acc)
        tl.debug_barrier()
        arrived = tl.atomic_add(cnt_ptr + pid, 1, sem="acq_rel", scope="gpu")
        if arrived == n_split - 1:
            tl.debug_barrier()
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for s in range(0, n_split):
                acc += tl.load(ws_tile + s * BLOCK_M * BLOCK_N + tile, cache_modifier=".cg")
            tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
            tl.atomic_xchg(cnt_ptr + pid, 0)
    else:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)


WS = torch.empty(1 << 24, device="cuda", dtype=torch.float32)
CNT = torch.zeros(1 << 16, device="cuda", dtype=torch.int32)


def make(x, w, BM, BN, BK, split, swap, stages, warps):
    M, K = x.shape
    N = w.shape[0]
    split_tiles = triton.cdiv(triton.cdiv(K, split), BK)
    n_split = triton.cdiv(K, split_tiles * BK)
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    xd = TensorDescriptor.from_tensor(x, [BM, BK])
    wd = TensorDescriptor.from_tensor(w, [BN, BK])
    y = torch.empty(M, N, device="cuda", dtype=x.dtype)
    grid = (tiles, n_split)
    def run():
        tma_kernel[grid](xd, wd, y, WS, CNT, M, N, K, split_tiles, N, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                         SWAP_AB=swap, SPLIT=n_split > 1, STAGES=stages, num_warps=warps)
        return y
    return run


def configs(M, N, K):
    out = []
    for BN in (64, 128, 256):
        for BK in (64, 128):
            for swap in (False, True):
                if swap and BN > 128:
                    continue
                tiles = triton.cdiv(M, M) * triton.cdiv(N, BN)
                s1 = 1
                while tiles * s1 < 132 and s1 < 16:
                    s1 *= 2
                for split in sorted({s1, max(1, s1 // 2), s1 * 2}):
                    stages = 4 if (M + BN) * BK * 2 * 4 <= 200 * 1024 else 3
                    warps = 8 if BN * M >= 128 * 256 else 4
                    out.append((M, BN, BK, split, swap, stages, warps))
    return out


def warm_one(args):
    M, N, K, cfg = args
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    try:
        make(x, w, *cfg)()
        torch.cuda.synchronize()
    except Exception as e:
        return f"{cfg}: {e}"[:200]


if __name__ == "__main__":
    import multiprocessing as mp
    SH = ((4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192))
    tasks = sorted({(M, 4096, 4096, c[:3] + (c[3] > 1 and 2 or 1,) + c[4:]) for M in (64, 128) for N, K in SH for c in configs(M, N, K)})
    t0 = time.time()
    with mp.get_context("spawn").Pool(14) as pool:
        errs = [e for e in pool.map(warm_one, tasks, chunksize=1) if e]
    print(f"warm {len(tasks)} in {time.time()-t0:.0f} s; errors {len(errs)}: {errs[:2]}", flush=True)
    torch.manual_seed(0)
    for N, K in SH:
        w = torch.randn(N, K, device="cuda", dtype=torch.float16) / K ** 0.5
        for M in (64, 128):
            x = torch.randn(M, K, device="cuda", dtype=torch.float16)
            ref = x.float() @ w.float().t()
            t_cb = min(measure.bench(lambda: torch.nn.functional.linear(x, w), warmup=5, rep=20) for _ in range(2))
            res = []
            for cfg in configs(M, N, K):
                try:
                    fn = make(x, w, *cfg)
                    err = measure.rel_err(fn(), ref)
                    if not err < 2e-3:
                        res.append((float("inf"), cfg, f"err {err:.1e}"))
                        continue
                    res.append((measure.bench(fn, warmup=5, rep=20), cfg, ""))
                except Exception as e:
                    res.append((float("inf"), cfg, type(e).__name__ + str(e)[:80]))
            res.sort(key=lambda r: r[0])
            print(f"M={M} {N}x{K}: cublas {t_cb*1e3:.1f} us; top: " + "; ".join(
                f"{cfg} {t*1e3:.1f} us ({t_cb/t:.2f}x)" for t, cfg, _ in res[:4]), flush=True)
            errs = [r for r in res if r[2]]
            if errs:
                print("   failures:", len(errs), errs[0][1], errs[0][2])
            for t, cfg, _ in res[:2]:
                fn = make(x, w, *cfg)
                each = measure.bench_each_round({"cublas": lambda: torch.nn.functional.linear(x, w), "tma": fn}, rounds=3, warmup=5, rep=20)
                c, m = min(each["cublas"]), min(each["tma"])
                cc = measure.bench_l2(lambda: torch.nn.functional.linear(x, w), "clean"); mc = measure.bench_l2(fn, "clean")
                print(f"    rounds {cfg}: cublas {c*1e3:.1f} tma {m*1e3:.1f} -> {c/m:.2f}x ; clean cublas {cc*1e3:.1f} tma {mc*1e3:.1f} -> {cc/mc:.2f}x", flush=True)
    print(f"total {time.time()-t0:.0f} s")
