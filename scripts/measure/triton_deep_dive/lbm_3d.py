#!/usr/bin/env python3
"""Three-dimensional validation of the lattice Boltzmann solver of "Deep Dive into OpenAI Triton".

D3Q19, tau = 0.8, the PyTorch step of snippets/triton_deep_dive/lbm.py on the CPU (lbm.py's own check
matches the Triton kernel against it population for population, walls on every axis and the lid
included), through the cases of snippets/triton_deep_dive/lbm_3d.py:
- shear_wave: u_x(z) between resting walls on z, n = 16, 32, 64, 128 cells across, to t = n^2 / (pi^2 nu);
  error: relative L2 norm of the velocity against the decaying first diffusion mode; order: log2 of the
  error ratio between successive grids; mass_drift: relative change of the total mass over the run;
- couette: plane Couette flow under the lid (lid speed 0.1), n = 16, 20 decay times of the slowest
  transient; deviation: the largest |u_x / U - y / n|; mass_drift: relative change of the total mass;
- taylor_green: the vortex in the x-y, x-z and y-z planes of an n x n x 2 box, n = 32 and 64, diffusive
  scaling as on the page's Validation 1; error and order as for shear_wave;
- shear_wave_fp64 / shear_wave_fp64_rounded_w: the shear wave through the same step in fp64 arithmetic, with
  exact weights (the scheme without rounding; n = 16 ... 128) or with the weights rounded to fp32 as the fp32
  step uses them (the drift without fp32 arithmetic; n = 16, 32, 64): error, order, mass_drift_fp64;
- d3q19_weights_fp32: weights_sum_excess, the exact sum of D3Q19's weights rounded to fp32, minus 1;
- shear_wave_sum1_w, couette_sum1_w, d3q19_weights_sum1: the first remedy for the drift, tested here but
  not applied to lbm.py: the same fp32 runs with lbm_3d.fp32_weights_summing_to_one(D3Q19), weights
  moved by one ulp each (the rest weight up, the others down) so that their exact sum is 1;
- shear_wave_shifted (n = 16 ... 128), couette_shifted: the second remedy, also tested here and not applied:
  lbm_3d.ShiftedLBM, the same PyTorch step computing in fp32 with departures from rest, h_i = f_i - w_i;
  mass_drift_roundoff (round-off, shown and not compared); decay_per_step = nu (pi / n)^2, the fraction of
  itself the wave loses in one step, and eps_over_decay = 2^-24 / decay_per_step (arithmetic, not measured).
Targets: error below 1 % and order about 2 (as for Validation 1); the x-z and y-z planes equal to the x-y
plane to within 0.1 % of its error; the Couette deviation below 1e-3 lid units.
"""

from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 50, "quick_varies": ["n", "steps"]}

import math
from fractions import Fraction

from sitekit import data, measure

NAME = data.name_of(__file__)
SHEAR = [16, 32, 64, 128]  # the fp32 runs and the fp64 scheme; the rounded-weights and moved-weights series stop at 64
COUETTE = 16
PLANES = ("xy", "xz", "yz")
TG = [32, 64]
TARGET = 0.01
TAU = 0.8  # the cases' default


def fp64_run(lbm, n: int, exact_weights: bool, tau: float = TAU, u0: float = 0.01) -> tuple[float, float, int]:
    """The shear wave's run (the start state of lbm_3d.shear_wave, as many steps) through lbm.torch_step in fp64
    arithmetic, with D3Q19's weights either exact (float64 1/3, 1/18, 1/36) or rounded to fp32 as the fp32
    step uses them: (relative change of the total mass, relative L2 error of the velocity against the decaying
    mode, steps). Separates the weights' rounding, and the rounding of fp32 arithmetic, from the scheme."""
    import torch

    nu = (tau - 0.5) / 3
    steps = round(n * n / (math.pi**2 * nu))
    z = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    u = torch.zeros(3, n, 2, 2, dtype=torch.float64)
    u[0] = u0 * torch.sin(math.pi * z)[:, None, None]
    sim = lbm.LBM(lbm.D3Q19, (2, 2, n), tau, (True, True, False), backend="torch", device="cpu").init(u=u.float())
    shifts, wall, lid, opp, c, w, omega = sim._torch_args
    w = lbm.D3Q19.w.view(-1, 1, 1, 1) if exact_weights else w.double()
    f, out = sim.f.double(), torch.empty_like(sim.f, dtype=torch.float64)
    mass = f.sum().item()
    for _ in range(steps):
        lbm.torch_step(f, out, shifts, wall, lid.double(), opp, c.double(), w, omega)
        f, out = out, f
    got = torch.einsum("qzyx,qa->azyx", f, c.double()) / f.sum(0)
    exact = u * math.exp(-nu * (math.pi / n) ** 2 * steps)
    return f.sum().item() / mass - 1, ((got - exact).norm() / exact.norm()).item(), steps


def with_orders(series: list[dict]) -> list[dict]:
    """One case's rows on successive grids: each after the first gets the observed order, log2 of the error ratio."""
    for prev, row in zip(series, series[1:]):
        row["order"] = math.log2(prev["error"] / row["error"])
    return series


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # boxes of a few thousand cells: threads cost more than they save
    measure.snippet_path("triton_deep_dive")  # lbm_3d.py imports lbm by plain name
    cases = measure.snippet("triton_deep_dive/lbm_3d")
    run = dict(backend="torch", device="cpu")
    rows = []
    shear = SHEAR[:2] if args.quick else SHEAR
    # the fp32 shear wave with the rounded weights, and with the two remedies, tested but not applied to lbm.py:
    # fp32 weights whose exact sum is 1 (to n = 64), and computing with departures from rest
    moved = cases.fp32_weights_summing_to_one(cases.D3Q19)
    variants = (
        ("shear_wave", dict(lattice=cases.D3Q19), shear),
        ("shear_wave_sum1_w", dict(lattice=moved), shear[:3]),
        ("shear_wave_shifted", dict(shifted=True), shear),
    )
    for case, how, sizes in variants:
        series = []
        for n in sizes:
            err, drift, steps = cases.shear_wave(n, **how, **run)
            # with departures from rest the drift is round-off, whose sign and size vary with the CPU: shown, not compared
            drift_key = "mass_drift_roundoff" if how.get("shifted") else "mass_drift"
            row = {"case": case, "plane": "-", "n": n, "steps": steps, "error": err, drift_key: drift}
            if how.get("shifted"):  # the fraction of itself the wave loses per step, nu (pi / n)^2: arithmetic
                row["decay_per_step"] = (TAU - 0.5) / 3 * (math.pi / n) ** 2
                row["eps_over_decay"] = 2.0**-24 / row["decay_per_step"]  # fp32's resolution, 2^-24, in units of it
            if case == "shear_wave":
                row["met_error"] = err < TARGET
            series.append(row)
        rows += with_orders(series)
    lbm = measure.snippet("triton_deep_dive/lbm")
    # where the fp32 shear wave's mass drift comes from, and what it does to the error: the same runs in fp64
    # arithmetic, with exact weights (the scheme alone) and with the weights rounded to fp32 (the drift alone)
    for case, exact, sizes in (("shear_wave_fp64", True, shear), ("shear_wave_fp64_rounded_w", False, shear[:3])):
        series = []
        for n in sizes:
            drift, err, steps = fp64_run(lbm, n, exact)
            series.append({"case": case, "plane": "-", "n": n, "steps": steps, "error": err, "mass_drift_fp64": drift})
        rows += with_orders(series)
    # the weights as the fp32 step holds them (1/3, 1/18, 1/36 rounded to fp32) and as moved, summed exactly, minus 1
    for case, lat in (("d3q19_weights_fp32", lbm.D3Q19), ("d3q19_weights_sum1", moved)):
        excess = float(sum(Fraction(x) for x in lat.w.float().tolist()) - 1)
        rows.append({"case": case, "plane": "-", "n": 0, "steps": 0, "weights_sum_excess": excess})
    n = 8 if args.quick else COUETTE
    for case, how in (
        ("couette", dict(lattice=cases.D3Q19)),
        ("couette_sum1_w", dict(lattice=moved)),
        ("couette_shifted", dict(shifted=True)),
    ):
        dev, drift, steps = cases.couette(n, **how, **run)
        drift_key = "mass_drift_roundoff" if how.get("shifted") else "mass_drift"
        rows.append({"case": case, "plane": "-", "n": n, "steps": steps, "deviation": dev, drift_key: drift})
    for plane in PLANES:
        series = []
        for n in TG[:1] if args.quick else TG:
            err = cases.taylor_green_plane(n, plane, **run)
            series.append(
                {
                    "case": "taylor_green",
                    "plane": plane,
                    "n": n,
                    "steps": n * n // 8,
                    "error": err,
                    "met_error": err < TARGET,
                }
            )
        rows += with_orders(series)
    for row in rows:
        print(row, flush=True)
    metrics = {
        "error": {"unit": "", "noise": 0.02, "fmt": ".2e"},
        "order": {"unit": "", "noise": 0.02, "fmt": ".2f"},
        # fp32 rounding that a steady state repeats every step: its size depends on the CPU's arithmetic
        "deviation": {"unit": "× U", "noise": 0.5, "fmt": ".1e"},
        "mass_drift": {"unit": "", "noise": 0.5, "fmt": ".1e"},
        # fp64 round-off: its last digits depend on the CPU's vector code, so it is shown, not compared
        "mass_drift_fp64": {"unit": "", "noise": 0.5, "fmt": ".1e", "check": False},
        "mass_drift_roundoff": {"unit": "", "noise": 0.5, "fmt": ".1e", "check": False},
        "weights_sum_excess": {"unit": "", "noise": 0, "fmt": ".2e"},
        "decay_per_step": {"unit": "", "noise": 0, "fmt": ".1e"},
        "eps_over_decay": {"unit": "", "noise": 0, "fmt": ".1e"},
        "met_error": {"unit": "bool", "noise": 0, "of": "error", "target": TARGET},
    }
    return data.save(data.new(NAME, metrics, rows, tau=TAU), args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
