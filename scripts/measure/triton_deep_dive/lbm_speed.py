#!/usr/bin/env python3
"""Speed of the lattice Boltzmann step of "Deep Dive into OpenAI Triton": Triton against the same step in
PyTorch eager and under torch.compile, and against the device's copy bandwidth, same run.

Lid-driven cavity (walls on every side, moving lid), fp32: D2Q9 on 4096^2 cells and D3Q19 on 256^3.
MLUPS = cells updated per microsecond; effective bandwidth = MLUPS x bytes moved per cell update
(2 Q x 4: every population read once and written once) as a fraction of a 1 GiB device copy. Every
version's output after one step is checked against the Triton kernel's first. Rows of table "speed":
the cell kernel (one cell per thread, the page's kernel), the first version (a (QP, BLOCK) tile per
program, impl "triton_tile"), the cell kernel with fp16 storage (impl "triton_fp16", 2 Q x 2 bytes per
cell), PyTorch eager and torch.compile. A sweep of the cell kernel's BLOCK and num_warps is recorded
(table "sweep"). Three rounds in turn, best median kept. Table "storage": the Taylor-Green error at
n = 128 with fp32 and with fp16 storage, the accuracy that fp16 costs.
Target (issue 14): >= 0.80x copy. FluidX3D reports 23,056 MLUPS for D3Q19 fp32 on the H200, which the
issue puts at about 0.82x of the copy bandwidth measured here; the 0.82 is that conversion, not FluidX3D's.
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 85}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
CASES = [("D2Q9", (4096, 4096)), ("D3Q19", (256, 256, 256))]
QUICK_CASES = [("D2Q9", (512, 512)), ("D3Q19", (64, 64, 64))]
SWEEP = [(64, 2), (128, 4), (128, 2), (256, 4), (256, 8), (512, 4), (512, 8), (1024, 8)]
TARGET = 0.80


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile (its compile takes minutes)")
    args = ap.parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    lbm = measure.snippet("triton_deep_dive/lbm")
    copy_tbps, _ = measure.copy_tbps()
    rows = [{"table": "speed", "lattice": "copy", "impl": "copy", "tbps": copy_tbps, "frac_copy": 1.0}]
    for lat_name, shape in (QUICK_CASES if args.quick else CASES):
        lat = getattr(lbm, lat_name)
        cells = 1
        for s in shape:
            cells *= s
        nbytes = 2 * lat.Q * 4
        walls = (False, False, False)
        tri = lbm.LBM(lat, shape, 0.6, walls, u_lid=0.1, backend="triton", device="cuda")
        tile = lbm.LBM(lat, shape, 0.6, walls, u_lid=0.1, backend="triton", device="cuda", kernel="tile")
        half = lbm.LBM(lat, shape, 0.6, walls, u_lid=0.1, backend="triton", device="cuda", storage=torch.float16)
        ref = lbm.LBM(lat, shape, 0.6, walls, u_lid=0.1, backend="torch", device="cuda")
        torch.manual_seed(0)
        state = tri.equilibrium(torch.ones(tri.f.shape[1:], device="cuda"),
                                0.05 * torch.randn(3, *tri.f.shape[1:], device="cuda"))
        for sim in (tri, tile, half, ref):
            sim.set_populations(state)
        tri.step()
        fns = {"triton": lambda: tri.step(), "triton_tile": lambda: tile.step(), "triton_fp16": lambda: half.step(),
               "torch_eager": lambda: ref.step()}
        if not args.no_compile:
            # dynamo keeps compiled code on torch_step's code object, shared by every torch.compile wrapper of it:
            # without a reset the second lattice recompiles with dynamic sizes (automatic dynamic shapes)
            torch._dynamo.reset()
            cstep = torch.compile(lbm.torch_step, dynamic=False)
            fns["torch_compile"] = lambda: cstep(ref.f, ref.f2, *ref._torch_args)
        for impl in ("triton_tile", "triton_fp16", "torch_eager", "torch_compile"):
            if impl not in fns:
                continue
            sims = {"triton_tile": tile, "triton_fp16": half}
            sim = sims.get(impl, ref)
            sim.set_populations(state)
            fns[impl]()
            out = ref.f2 if impl == "torch_compile" else sim.populations()   # step() swaps, the compiled call does not
            err = (out - tri.f).abs().max().item()
            if err > (1e-4 if impl == "triton_fp16" else 1e-5):
                sys.exit(f"{NAME}: {impl} {lat_name} differs from the Triton step by {err:.2e}")
        # block-size sweep of the cell kernel (its own rows), for each storage, then the versions in rounds
        for storage, sim in (("fp32", tri), ("fp16", half)):
            best_cfg, best_t = None, None
            for block, warps in SWEEP[:2 if args.quick else None]:
                sim.block, sim.num_warps = block, warps
                t = measure.bench(lambda: sim.step())
                rows.append({"table": "sweep", "lattice": lat_name, "storage": storage, "BLOCK": block,
                             "num_warps": warps, "mlups": cells / t / 1e3})
                if best_t is None or t < best_t:
                    best_cfg, best_t = (block, warps), t
            default = lbm.LBM(lat, (8, 8, 8) if lat.dim == 3 else (8, 8), 0.6, walls, backend="triton",
                              device="cuda", storage=sim.storage)
            sim.block, sim.num_warps = default.block, default.num_warps
            del default
            rows.append({"table": "choice", "lattice": lat_name, "storage": storage, "BLOCK": sim.block,
                         "num_warps": sim.num_warps, "best_BLOCK": best_cfg[0], "best_num_warps": best_cfg[1],
                         "mlups": cells / best_t / 1e3})
        each = measure.bench_each_round(fns, rounds=1 if args.quick else 3)
        for impl, ts in each.items():
            t = min(ts)
            mlups = cells / t / 1e3
            nb = nbytes // 2 if impl == "triton_fp16" else nbytes
            tbps = mlups * 1e6 * nb / 1e12
            row = {"table": "speed", "lattice": lat_name, "impl": impl, "mlups": mlups, "mlups_spread": measure.spread(ts),
                   "tbps": tbps, "frac_copy": tbps / copy_tbps, "bytes_per_cell": nb}
            if impl == "triton":
                row["met_copy"] = tbps / copy_tbps >= TARGET
            rows.append(row)
            print(row, flush=True)
        del tri, tile, half, ref, fns, state
        torch.cuda.empty_cache()
    # what fp16 storage costs in accuracy: the Taylor-Green vortex at n = 128 (the page's validation case)
    for lat_name in ("D2Q9", "D3Q19"):
        for storage in ("fp32", "fp16"):
            err = lbm.taylor_green(128, lattice=getattr(lbm, lat_name), backend="triton", device="cuda",
                                   nz=1 if lat_name == "D2Q9" else 4,
                                   storage={"fp32": torch.float32, "fp16": torch.float16}[storage])
            rows.append({"table": "storage", "lattice": lat_name, "storage": storage, "n": 128, "tg_error": err})
            print(rows[-1], flush=True)
    metrics = {
        "mlups": {"unit": "MLUPS", "noise": 0.07, "fmt": ".0f"},
        "mlups_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "tbps": {"unit": "TB/s", "noise": 0.07, "fmt": ".2f"},
        "frac_copy": {"unit": "× copy", "noise": 0.07, "fmt": ".2f"},
        "met_copy": {"unit": "bool", "noise": 0, "of": "frac_copy", "target": TARGET},
        "tg_error": {"unit": "", "noise": 0.05, "fmt": ".2e"},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
