#!/usr/bin/env python3
"""Velocity field of the lid-driven cavity at Re = 100 for the picture on "Deep Dive into OpenAI Triton".

D2Q9, 64 x 64 cells, lid speed 0.1, run to a steady state (velocity change < 1e-6 lid units per step)
with the PyTorch implementation of the page's step (the tests check the Triton kernel against it), on
the CPU. Rows: u and v (in lid units) averaged onto 32 x 32 cells. It also writes the picture,
data/triton_deep_dive/ir/cavity_field.svg: the speed as colours and streamlines traced through the
field, rendered from the rows by render_svg() (tests regenerate it from the JSON and compare).
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 120}

import math
from pathlib import Path

from sitekit import ROOT, data, measure

NAME = data.name_of(__file__)
N, RE, U_LID, TOL, CELLS = 64, 100.0, 0.1, 1e-6, 32
SVG = ROOT / "data" / "triton_deep_dive" / "ir" / "cavity_field.svg"
# a perceptually ordered ramp (dark blue -> teal -> yellow), interpolated linearly
RAMP = [(0.0, (48, 18, 59)), (0.25, (50, 100, 180)), (0.5, (30, 170, 150)), (0.75, (150, 210, 70)),
        (1.0, (250, 230, 40))]


def _colour(t: float) -> str:
    t = min(max(t, 0.0), 1.0)
    for (a, ca), (b, cb) in zip(RAMP, RAMP[1:]):
        if t <= b:
            w = (t - a) / (b - a)
            return "#%02x%02x%02x" % tuple(round(x + w * (y - x)) for x, y in zip(ca, cb))
    return "#%02x%02x%02x" % RAMP[-1][1]


def render_svg(ds: dict) -> str:
    """The picture, from the dataset alone: cells coloured by speed (scaled to the largest speed in the
    cavity interior), and streamlines traced with midpoint steps through the bilinear field."""
    rows = ds["rows"]
    n = max(r["i"] for r in rows) + 1
    u = [[0.0] * n for _ in range(n)]
    v = [[0.0] * n for _ in range(n)]
    for r in rows:
        u[r["j"]][r["i"]], v[r["j"]][r["i"]] = r["u"], r["v"]
    vmax = max(math.hypot(u[j][i], v[j][i]) for j in range(n) for i in range(n))
    size, pad = 320, 10
    cell = size / n
    out = [f'<svg class="data-plot" viewBox="0 0 {size + 2 * pad} {size + 2 * pad}" width="{size + 2 * pad}" '
           f'role="img" xmlns="http://www.w3.org/2000/svg">']
    for j in range(n):
        for i in range(n):
            x, y = pad + i * cell, pad + (n - 1 - j) * cell          # y grows upwards: the lid is on top
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell + 0.3:.1f}" height="{cell + 0.3:.1f}" '
                       f'fill="{_colour(math.hypot(u[j][i], v[j][i]) / vmax)}"/>')

    def field(px, py):   # bilinear in cell-centre coordinates (px, py in [0, n])
        fx, fy = min(max(px - 0.5, 0.0), n - 1.001), min(max(py - 0.5, 0.0), n - 1.001)
        i, j = int(fx), int(fy)
        a, b = fx - i, fy - j
        def lerp(g):
            return ((1 - a) * (1 - b) * g[j][i] + a * (1 - b) * g[j][i + 1]
                    + (1 - a) * b * g[j + 1][i] + a * b * g[j + 1][i + 1])
        return lerp(u), lerp(v)

    for k in range(1, 12):                      # seeds on the vertical centre line
        px, py = n / 2, n * k / 12
        pts = []
        for _ in range(600):
            pts.append((pad + px * cell, pad + (n - py) * cell))
            a, b = field(px, py)
            s = math.hypot(a, b)
            if s < 1e-4:
                break
            h = 0.5 / s                             # half a cell per step
            a2, b2 = field(px + 0.5 * h * a, py + 0.5 * h * b)
            px, py = px + h * a2, py + h * b2
            if not (0 < px < n and 0 < py < n) or (len(pts) > 20 and math.dist(pts[-1], pts[0]) < cell * 0.6):
                break
        out.append('<polyline fill="none" stroke="white" stroke-opacity=".85" stroke-width="1.2" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)        # a 64 x 64 grid: threads cost more than they save
    lbm = measure.snippet("triton_deep_dive/lbm")
    n = 32 if args.quick else N
    tau = lbm.cavity_parameters(RE, n, U_LID)
    sim = lbm.LBM(lbm.D2Q9, (n, n), tau, (False, False, False), U_LID, backend="torch", device="cpu").init()
    prev, steps = sim.moments()[1], 0
    while True:                                                       # the same stopping rule as cavity()
        sim.step(250)
        steps += 250
        u = sim.moments()[1]
        res = ((u - prev).abs().max() / U_LID / 250).item()
        prev = u
        if res < TOL or steps >= 200_000:
            break
    vel = u[:2, 0] / U_LID                                            # (2, ny, nx) in lid units
    coarse = torch.nn.functional.avg_pool2d(vel[None], n // CELLS)[0]
    rows = [{"i": i, "j": j, "u": round(coarse[0, j, i].item(), 5), "v": round(coarse[1, j, i].item(), 5)}
            for j in range(CELLS) for i in range(CELLS)]
    metrics = {"u": {"unit": "× U", "noise": 0.02, "fmt": ".3f", "check": False},
               "v": {"unit": "× U", "noise": 0.02, "fmt": ".3f", "check": False}}
    ds = data.new(NAME, metrics, rows, steps=steps, n=n, residual=res)
    if not args.quick:
        SVG.parent.mkdir(parents=True, exist_ok=True)
        Path(SVG).write_text(render_svg(ds), encoding="utf-8")
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
