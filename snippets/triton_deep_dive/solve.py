"""Run one lattice Boltzmann case from the command line and write the result as JSON.

    python snippets/triton_deep_dive/solve.py --case cavity --re 100 --n 128 --tol 1e-6 --out result.json
    python snippets/triton_deep_dive/solve.py --case taylor-green --n 64

cavity: lid-driven square cavity (D2Q9), centre-line profiles (and their largest deviation from
Ghia, Ghia & Shin 1982 at Re = 100), residual history and timing. taylor-green: the decaying vortex's
relative velocity error against the analytic solution. The Triton kernel runs on a CUDA GPU; without
one the PyTorch implementation of the same step runs on the CPU. Unstable parameters are refused.
"""
# --8<-- [start:cli]
import argparse
import json
import sys

import torch

from lbm import D2Q9, D3Q19, cavity, cavity_parameters, taylor_green


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=["cavity", "taylor-green"], default="cavity")
    ap.add_argument("--re", type=float, default=100.0, help="Reynolds number U n / nu (cavity)")
    ap.add_argument("--n", type=int, default=32, help="cells per side")
    ap.add_argument("--u-lid", type=float, default=0.1, help="lid speed in lattice units (Mach = u sqrt 3)")
    stop = ap.add_mutually_exclusive_group()
    stop.add_argument("--steps", type=int, help="run exactly this many steps")
    stop.add_argument("--tol", type=float, default=1e-6, help="stop when the velocity changes less than this "
                      "per step, in lid units (default 1e-6)")
    ap.add_argument("--lattice", choices=["D2Q9", "D3Q19"], default="D2Q9", help="taylor-green only")
    ap.add_argument("--backend", choices=["auto", "triton", "torch"], default="auto")
    ap.add_argument("--out", help="write the result here as JSON")
    args = ap.parse_args(argv)
    backend = args.backend
    if backend == "auto":
        backend = "triton" if torch.cuda.is_available() else "torch"
    device = "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
    if device == "cpu" and args.n <= 64:
        torch.set_num_threads(1)        # small grids: thread start-up costs more than it saves
    if args.case == "cavity":
        try:
            cavity_parameters(args.re, args.n, args.u_lid)
            if args.steps is not None and args.steps < 1:
                raise ValueError(f"--steps must be at least 1, got {args.steps}")
        except ValueError as e:         # the reason, and what would work; exit status 2 like a usage error
            print(f"solve.py: refused: {e}", file=sys.stderr)
            return 2
        result = cavity(args.re, args.n, args.u_lid, steps=args.steps, tol=args.tol, backend=backend, device=device)
        print(f"cavity Re={args.re:g} n={args.n}: tau={result['tau']:.4f}, {result['steps']} steps, "
              f"{result['mlups']:.1f} MLUPS, final residual {result['residual'][-1][1]:.1e}")
        if result["ghia_dev_u"] is not None:
            print(f"largest deviation from Ghia et al. (1982): u {result['ghia_dev_u']:.4f}, "
                  f"v {result['ghia_dev_v']:.4f} (lid units)")
    else:
        lattice = D2Q9 if args.lattice == "D2Q9" else D3Q19
        err = taylor_green(args.n, lattice=lattice, backend=backend, device=device,
                           nz=1 if lattice is D2Q9 else 4)
        result = {"case": "taylor-green", "lattice": lattice.name, "n": args.n, "error": err}
        print(f"Taylor-Green {lattice.name} n={args.n}: relative velocity error {err:.2e}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
# --8<-- [end:cli]
