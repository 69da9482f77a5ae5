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
import math
import os
import sys

import torch

from lbm import D2Q9, D3Q19, MACH_MAX, cavity, cavity_parameters, taylor_green

CAVITY_DEFAULTS = {"re": 100.0, "u_lid": 0.1, "tol": 1e-6}   # --steps has none: without it, run to --tol


def check(args) -> None:
    """Every refusal before the run starts, as a ValueError that says what would work; fills in the cavity's
    defaults for the options not given (None until then, so that taylor-green can refuse the given ones)."""
    if args.case == "taylor-green":
        given = [f"--{k.replace('_', '-')}" for k in (*CAVITY_DEFAULTS, "steps") if getattr(args, k) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: for the cavity only; taylor-green sets its vortex's speed "
                             f"(0.05 * 32 / n) and runs n^2 / 8 steps")
        if args.n < 1:
            raise ValueError(f"taylor-green: --n is the number of cells per side, at least 10; got {args.n}")
        if 0.05 * 32 / args.n * math.sqrt(3) > MACH_MAX:
            raise ValueError(f"taylor-green: n={args.n} starts the vortex above Mach {MACH_MAX}; use n >= 10")
    else:
        if args.lattice != "D2Q9":
            raise ValueError("cavity: the cavity is two-dimensional (D2Q9); --lattice D3Q19 is for taylor-green")
        for k, default in CAVITY_DEFAULTS.items():
            v = getattr(args, k)
            if v is None:
                setattr(args, k, default)
            elif not (math.isfinite(v) and v > 0):
                raise ValueError(f"--{k.replace('_', '-')} must be a finite number above 0, got {v}")
        if args.steps is not None and args.steps < 1:
            raise ValueError(f"--steps must be at least 1, got {args.steps}")
        cavity_parameters(args.re, args.n, args.u_lid)
    if args.backend == "triton" and not torch.cuda.is_available():
        raise ValueError("--backend triton needs a CUDA GPU; --backend torch runs the same step on the CPU")
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise ValueError(f"--out {args.out}: the folder {os.path.dirname(os.path.abspath(args.out))} does not exist")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=["cavity", "taylor-green"], default="cavity")
    ap.add_argument("--re", type=float, help="Reynolds number U n / nu (cavity; default 100)")
    ap.add_argument("--n", type=int, default=32, help="cells per side")
    ap.add_argument("--u-lid", type=float, help="lid speed in lattice units, Mach = u sqrt 3 (cavity; default 0.1)")
    stop = ap.add_mutually_exclusive_group()
    stop.add_argument("--steps", type=int, help="run exactly this many steps (cavity)")
    stop.add_argument("--tol", type=float, help="stop when the velocity changes less than this per step, in lid "
                      "units (cavity; default 1e-6)")
    ap.add_argument("--lattice", choices=["D2Q9", "D3Q19"], default="D2Q9", help="taylor-green only")
    ap.add_argument("--backend", choices=["auto", "triton", "torch"], default="auto")
    ap.add_argument("--out", help="write the result here as JSON")
    args = ap.parse_args(argv)
    try:
        check(args)
    except ValueError as e:             # the reason, and what would work; exit status 2 like a usage error
        print(f"solve.py: refused: {e}", file=sys.stderr)
        return 2
    backend = args.backend
    if backend == "auto":
        backend = "triton" if torch.cuda.is_available() else "torch"
    device = "cuda" if backend == "triton" else "cpu"
    if device == "cpu" and args.n <= 64:
        torch.set_num_threads(1)        # small grids: thread start-up costs more than it saves
    try:
        if args.case == "cavity":
            result = cavity(args.re, args.n, args.u_lid, steps=args.steps, tol=args.tol, backend=backend,
                            device=device)
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
    except ValueError as e:             # a limit the solver itself checks (e.g. a grid too large to index)
        print(f"solve.py: refused: {e}", file=sys.stderr)
        return 2
    except FloatingPointError as e:     # the run became unstable
        print(f"solve.py: {e}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
# --8<-- [end:cli]
