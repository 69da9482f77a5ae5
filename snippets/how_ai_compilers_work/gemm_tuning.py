"""One kernel, three ways to tune it: a Triton GEMM with a fused bias + GELU epilogue.

    python snippets/how_ai_compilers_work/gemm_tuning.py                      # on a CUDA GPU
    TRITON_INTERPRET=1 python snippets/how_ai_compilers_work/gemm_tuning.py   # on a CPU (tiny sizes)

Route 1 measures every config (@triton.autotune), route 2 predicts with an
analytical model and measures only its pick, route 3 learns a cost model from a
few measurements and measures only what it ranks best (Ansor/MetaSchedule style).
The page's table comes from scripts/measure/how_ai_compilers_work/autotune.py,
which imports this file and runs the same three routes over the full space.
"""
# --8<-- [start:kernel]
import itertools
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"   # Triton's CPU interpreter
DEVICE = "cpu" if INTERPRET else "cuda"


@triton.jit
def matmul_bias_gelu_kernel(
        a_ptr, b_ptr, bias_ptr, c_ptr,       # A [M, K], B [K, N], bias [N], C [M, N]; fp16
        M, N, K,                             # C is M x N; the dot products run over K
        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,   # element strides
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # output tile of one program instance
        BLOCK_K: tl.constexpr,               # depth of one step along K
        GROUP_M: tl.constexpr):              # tiles of M walked together, so B stays in L2
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    rows_in_group = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_n)) % rows_in_group
    pid_n = (pid % (GROUP_M * num_n)) // rows_in_group

    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M   # wrap instead of masking: loads stay unmasked
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)              # tensor cores; fp32 accumulator in registers
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # --8<-- [start:epilogue]
    # The epilogue: bias and GELU applied to the accumulator while it is still in registers.
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = acc + tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))   # exact GELU, as F.gelu
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, y.to(tl.float16), mask=(rows[:, None] < M) & (cols[None, :] < N))
    # --8<-- [end:epilogue]
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
def check_gemm_inputs(a, b, bias):
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("this kernel needs a CUDA GPU, or TRITON_INTERPRET=1 to run it on the CPU")
    for name, t in (("a", a), ("b", b), ("bias", bias)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t.device.type != DEVICE:
            raise ValueError(f"{name}: expected a tensor on {DEVICE}, got one on {t.device}")
        if t.dtype != torch.float16:
            raise TypeError(f"{name}: expected float16, got {t.dtype}")
    if a.dim() != 2 or b.dim() != 2 or bias.dim() != 1:
        raise ValueError(f"expected a [M, K], b [K, N], bias [N]; got {tuple(a.shape)}, {tuple(b.shape)}, {tuple(bias.shape)}")
    if a.shape[1] != b.shape[0] or bias.shape[0] != b.shape[1]:
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)} @ b {tuple(b.shape)} + bias {tuple(bias.shape)}")
    if not a.device == b.device == bias.device:
        raise ValueError(f"a, b and bias must be on one device, got {a.device}, {b.device} and {bias.device}")
    if bias.stride(0) != 1:
        raise ValueError("bias: the kernel reads it with unit stride; pass bias.contiguous()")


def matmul_bias_gelu(a, b, bias, config=None, kernel=matmul_bias_gelu_kernel):
    """gelu(a @ b + bias) in one kernel. `config`: a triton.Config, or None when `kernel` autotunes."""
    check_gemm_inputs(a, b, bias)
    if config is None and not isinstance(kernel, triton.runtime.Autotuner):
        raise ValueError("config=None needs a kernel wrapped in @triton.autotune; pass config=triton.Config(...), "
                         "e.g. config_space()[0]")
    if config is not None and not isinstance(config, triton.Config):
        raise TypeError(f"config: expected a triton.Config, got {type(config).__name__}")
    if config is not None and any(v < 1 or v & (v - 1) for k, v in config.kwargs.items() if k.startswith("BLOCK")):
        raise ValueError(f"config: BLOCK_M, BLOCK_N and BLOCK_K must be powers of two, got {config.kwargs}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    meta = {} if config is None else dict(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
    kernel[grid](a, b, bias, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), **meta)
    return c


def matmul_bias_gelu_eager(a, b, bias):
    return torch.nn.functional.gelu(a @ b + bias)   # 3 kernels: GEMM, add, GELU
# --8<-- [end:wrapper]


# --8<-- [start:space]
def config_space():
    """Every tile shape / pipeline depth / warp count worth trying on Hopper, minus the ones
    that cannot run: shared memory over 227 KiB per block, or an fp32 accumulator needing
    more than 128 registers per thread (it would spill)."""
    space = []
    for bm, bn, bk, stages, warps in itertools.product((64, 128, 256), (64, 128, 256), (32, 64, 128),
                                                        (2, 3, 4, 5), (4, 8)):
        smem = stages * (bm + bn) * bk * 2            # fp16 tiles of A and B, one per pipeline stage
        acc_regs = bm * bn // (32 * warps)            # fp32 accumulator registers per thread
        if smem <= 227 * 1024 and acc_regs <= 128:
            space.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                       num_warps=warps, num_stages=stages))
    return space


def describe(cfg):
    k = cfg.kwargs
    return f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']} s{cfg.num_stages} w{cfg.num_warps}"


def bench(fn, quantiles=None):
    """Median time of fn() in ms (do_bench's default is the mean): CUDA events on a GPU, a host clock
    in the interpreter.
    Short warm-up and repetition windows: a tuner calls this once per config."""
    if DEVICE == "cuda":
        return triton.testing.do_bench(fn, warmup=5, rep=25, quantiles=quantiles, return_mode="median")
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return [times[1]] * len(quantiles) if quantiles else times[1]
# --8<-- [end:space]


# --8<-- [start:model]
@dataclass(frozen=True)
class Gpu:
    """What the model knows about the chip. Defaults: an H100/H200 SXM (datasheet leads);
    the measurement script replaces the two rates with ceilings measured in the same run."""
    sms: int = 132                     # streaming multiprocessors
    smem_per_sm: int = 228 * 1024      # shared memory per SM, bytes
    smem_per_block: int = 227 * 1024   # the most one block may use
    regs_per_sm: int = 65536           # 32-bit registers per SM
    threads_per_sm: int = 2048
    smem_bytes_per_clk: int = 128      # shared-memory bandwidth per SM
    clock_ghz: float = 1.98
    tensor_tflops: float = 989.0       # dense fp16 tensor-core rate
    dram_tbps: float = 4.8             # HBM bandwidth: the H200 SXM's (an H100 SXM has 3.35)
    l2_over_dram: float = 2.0          # assumption: L2 feeds the SMs at about twice DRAM's rate
    latency_ns: float = 700.0          # assumption: time for a tile load to arrive


def model(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps, gpu=Gpu(), **_):
    """Predict one config's time (ms) without running it: occupancy, waves, and a roofline."""
    e = 2                                                        # bytes per fp16 element
    threads = 32 * num_warps
    smem = num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * e
    regs = BLOCK_M * BLOCK_N // threads + 40                     # accumulator + addresses, indices
    if smem > gpu.smem_per_block or regs > 255:
        return {"ms": math.inf}
    blocks_per_sm = min(gpu.smem_per_sm // (smem + 1024),       # 1 KiB reserved per block
                        gpu.regs_per_sm // (regs * threads),
                        gpu.threads_per_sm // threads, 32)
    tiles = math.ceil(M / BLOCK_M) * math.ceil(N / BLOCK_N)
    tiles_per_sm = math.ceil(tiles / gpu.sms)                    # the busiest SM sets the time
    wave_eff = tiles / (tiles_per_sm * gpu.sms)                  # < 1 when the last wave is partial
    tile_bytes = (BLOCK_M + BLOCK_N) * K * e                     # A and B panels one tile streams
    t_mma = tiles_per_sm * 2 * BLOCK_M * BLOCK_N * K / (gpu.tensor_tflops * 1e12 / gpu.sms)
    t_smem = tiles_per_sm * tile_bytes / (gpu.smem_bytes_per_clk * gpu.clock_ghz * 1e9)
    t_l2 = tiles * tile_bytes / (gpu.l2_over_dram * gpu.dram_tbps * 1e12)
    t_dram = (M * K + K * N + M * N + N) * e / (gpu.dram_tbps * 1e12)
    # Little's law: bytes in flight per SM must cover latency x bandwidth, or the pipeline starves.
    # (num_stages = 1 does not pipeline: one tile's loads in flight, then its MMAs)
    in_flight = blocks_per_sm * max(num_stages - 1, 1) * (BLOCK_M + BLOCK_N) * BLOCK_K * e
    needed = gpu.l2_over_dram * gpu.dram_tbps * 1e12 / gpu.sms * gpu.latency_ns * 1e-9
    hidden = min(1.0, in_flight / needed)
    t = max(t_mma, t_smem, t_l2, t_dram) / hidden + 3e-6         # + launch
    return {"ms": t * 1e3, "blocks_per_sm": blocks_per_sm, "wave_eff": wave_eff, "hidden": hidden,
            "smem": smem, "regs": regs, "bound": max(("mma", t_mma), ("smem", t_smem), ("l2", t_l2),
                                                     ("dram", t_dram), key=lambda p: p[1])[0]}


def predicted_ms(**kwargs):            # the signature Triton's perf_model hook calls
    return model(**kwargs)["ms"]
# --8<-- [end:model]


# --8<-- [start:costmodel]
def features(cfg, M, N, K):
    """What the learned model sees: the knobs, the resources they use, and the analytical estimate."""
    kw = cfg.all_kwargs()
    m = model(M, N, K, **kw)
    return [math.log2(kw["BLOCK_M"]), math.log2(kw["BLOCK_N"]), math.log2(kw["BLOCK_K"]),
            kw["num_stages"], kw["num_warps"] / 4, (m["regs"] - 40) / 128, m["smem"] / (227 * 1024),
            m["blocks_per_sm"], m["wave_eff"], m["hidden"], math.log(m["ms"])]


def fit_ridge(X, y, alpha=1.0):
    """Ridge regression on standardized features plus their squares: small, fast, no dependencies."""
    mu, sd = X.mean(0), X.std(0) + 1e-9
    lift = lambda X: np.hstack([(X - mu) / sd, ((X - mu) / sd) ** 2, np.ones((len(X), 1))])
    Z = lift(X)
    w = np.linalg.solve(Z.T @ Z + alpha * np.eye(Z.shape[1]), Z.T @ y)
    return lambda X: lift(X) @ w


def guided_search(space, measure, M, N, K, n_init=8, per_round=4, budget=24, seed=0):
    """Measure a few random configs, fit the model to log(time), measure the ones it ranks best
    (plus one random pick to keep exploring), refit, repeat until `budget` configs are measured."""
    if not space or budget < 1:
        raise ValueError(f"guided_search: needs a non-empty space and a budget >= 1, got {len(space)} configs, "
                         f"budget {budget}")
    rng = np.random.default_rng(seed)
    X = np.array([features(c, M, N, K) for c in space])

    def timed(i):
        try:
            return measure(space[i])
        except triton.runtime.errors.OutOfResources:   # does not fit this GPU: as autotune does, inf
            return math.inf

    times = {int(i): timed(i) for i in rng.choice(len(space), min(n_init, len(space)), replace=False)}
    while len(times) < min(budget, len(space)):
        seen = sorted(times)
        finite = [t for t in times.values() if math.isfinite(t)] or [1.0]
        y = np.log([min(times[i], 10 * max(finite)) for i in seen])    # a failed config: just "very slow"
        predict = fit_ridge(X[seen], y)
        rest = [i for i in range(len(space)) if i not in times]
        ranked = [rest[j] for j in np.argsort(predict(X[rest]))]
        picks = ranked[:per_round - 1] + [ranked[per_round - 1 + rng.integers(len(ranked) - per_round + 1)]] \
            if len(ranked) >= per_round else ranked
        for i in picks[:budget - len(times)]:
            times[i] = timed(i)
    best = min(times, key=times.get)
    return space[best], times[best], len(times)
# --8<-- [end:costmodel]


if __name__ == "__main__":
    # --8<-- [start:setup]
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gemm_tuning.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU at tiny sizes")
    SPACE = config_space()
    if INTERPRET:   # the interpreter runs tiles as numpy arrays: keep them small
        SPACE = [c for c in SPACE if c.kwargs["BLOCK_M"] <= 64 and c.kwargs["BLOCK_K"] <= 64 and c.num_stages <= 3]
    M, N, K = (128, 128, 128) if INTERPRET else (8192, 8192, 2048)
    torch.manual_seed(0)
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b = torch.randn(K, N, device=DEVICE, dtype=torch.float16) / K ** 0.5
    bias = torch.randn(N, device=DEVICE, dtype=torch.float16)
    ref = matmul_bias_gelu_eager(a.float(), b.float(), bias.float())
    out = matmul_bias_gelu(a, b, bias, config=SPACE[0])
    assert (out.float() - ref).norm() / ref.norm() < 1e-2, "fused kernel disagrees with eager"
    print(f"{len(config_space())} configs in the space; fused kernel matches eager")
    # --8<-- [end:setup]

    # --8<-- [start:route1]
    # Route 1: exhaustive search. @triton.autotune compiles and times every config the first
    # time it sees a new (M, N, K), then caches the winner for that key.
    demo = SPACE[::max(1, len(SPACE) // 6)][:6]    # 6 configs here; the measurement script tunes all
    tuned = triton.autotune(configs=demo, key=["M", "N", "K"], do_bench=bench)(matmul_bias_gelu_kernel)
    t0 = time.perf_counter()
    matmul_bias_gelu(a, b, bias, kernel=tuned)
    print(f"exhaustive: measured {len(tuned.configs_timings)} configs in {time.perf_counter() - t0:.1f} s, "
          f"best {describe(tuned.best_config)}")
    # --8<-- [end:route1]

    # --8<-- [start:route2]
    # Route 2: the model ranks every config and only its top pick is compiled and timed.
    # Triton's autotuner has a hook for exactly this: prune_configs_by={"perf_model", "top_k"}.
    picked = triton.autotune(configs=SPACE, key=["M", "N", "K"], do_bench=bench,
                             prune_configs_by={"perf_model": predicted_ms, "top_k": 1})(matmul_bias_gelu_kernel)
    matmul_bias_gelu(a, b, bias, kernel=picked)
    best = picked.best_config
    why = model(M, N, K, **best.all_kwargs())
    print(f"model: measured {len(picked.configs_timings)} config, picked {describe(best)} "
          f"({why['blocks_per_sm']} block(s)/SM, {why['wave_eff']:.0%} last-wave fill, {why['bound']}-bound)")
    # --8<-- [end:route2]

    # --8<-- [start:route3]
    # Route 3: cost-model-guided search over the same space.
    measure = lambda cfg: bench(lambda: matmul_bias_gelu(a, b, bias, config=cfg))
    t0 = time.perf_counter()
    best, ms, n = guided_search(SPACE, measure, M, N, K, n_init=4, per_round=2, budget=8)
    print(f"cost model: measured {n} of {len(SPACE)} configs in {time.perf_counter() - t0:.1f} s, best {describe(best)}")
    # --8<-- [end:route3]
