"""Three-dimensional checks of the lattice Boltzmann solver in lbm.py (same directory) against exact solutions.

The Taylor-Green vortex of lbm.py lies in the x-y plane, so it never uses D3Q19's third dimension. These
flows do, each one against a solution known in closed form:
- walls on z: a shear wave u_x(z) between two resting walls decays as the first diffusion mode;
- the lid on a 3-D lattice: plane Couette flow, steady and linear between a resting wall and the lid;
- the c_z directions in the bulk: the Taylor-Green vortex in the x-z and y-z planes.
Run it: `python snippets/triton_deep_dive/lbm_3d.py`. On a GPU it runs the Triton kernel; on a CPU the
PyTorch step, which lbm.py's own check matches against the kernel, population for population.
"""
import itertools
import math
from fractions import Fraction

import torch
from lbm import D3Q19, DEVICE, INTERPRET, LBM, Lattice

# --8<-- [start:cases]
AXES = {"x": 0, "y": 1, "z": 2}


def fp32_weights_summing_to_one(lat):
    """lat with its weights rounded to fp32 and then moved by a few ulps, the same for every direction of a
    class (rest, axis, diagonal), so that the exact sum of the fp32 values is 1. Rounded to nearest, D3Q19's
    weights sum to 1 + 2^-26 and D2Q9's to 1 + 2^-27. Of the moves that make the sum exact, the one that
    moves no class by more than one ulp, and the fewest classes, wins."""
    w = lat.w.float()
    classes = sorted(set(w.tolist()), reverse=True)

    def nudge(v, k):                      # v moved by k ulps in fp32
        t = torch.tensor(v, dtype=torch.float32)
        for _ in range(abs(k)):
            t = torch.nextafter(t, torch.tensor(2.0 if k > 0 else 0.0))
        return t.item()

    best = None
    for ks in itertools.product(range(-2, 3), repeat=len(classes)):
        moved = dict(zip(classes, (nudge(v, k) for v, k in zip(classes, ks))))
        if sum(Fraction(moved[x]) for x in w.tolist()) == 1:
            cost = (max(map(abs, ks)), sum(map(abs, ks)))
            if best is None or cost < best[0]:
                best = (cost, moved)
    if best is None:
        raise ValueError(f"{lat.name}: no move of at most 2 ulps per class makes the fp32 weights sum to 1")
    return Lattice(lat.name, lat.c.tolist(), [best[1][x] for x in w.tolist()])


def shear_wave(n, tau=0.8, u0=0.01, backend="triton", device=DEVICE, lattice=D3Q19, shifted=False):
    """u_x = u0 sin(pi z / n) between resting walls at z = 0 and z = n (half-way between the first and last
    layers and the ghost layers beyond them), periodic in x and y. It solves du/dt = nu d2u/dz2 with u = 0
    on the walls, so it decays as exp(-nu (pi / n)^2 t); run until it has fallen by e, t = n^2 / (pi^2 nu).
    Returns (relative L2 error of the velocity field, relative change of the total mass, steps).
    lattice: D3Q19, or the same lattice with other weights (fp32_weights_summing_to_one); shifted: run ShiftedLBM."""
    nu = (tau - 0.5) / 3
    steps = round(n * n / (math.pi ** 2 * nu))
    z = (torch.arange(n, dtype=torch.float64) + 0.5) / n          # node centres, walls at 0 and 1
    u = torch.zeros(3, n, 2, 2, dtype=torch.float64)               # (3, NZ, NY, NX)
    u[0] = u0 * torch.sin(math.pi * z)[:, None, None]
    solver = ShiftedLBM if shifted else LBM
    sim = solver(lattice, (2, 2, n), tau, (True, True, False), backend=backend, device=device).init(u=u)
    mass = sim.populations().double().sum().item()
    sim.step(steps)
    drift = sim.populations().double().sum().item() / mass - 1
    exact = u * math.exp(-nu * (math.pi / n) ** 2 * steps)
    got = sim.moments()[1].double().cpu()
    return ((got - exact).norm() / exact.norm()).item(), drift, steps


def couette(n, tau=0.8, u_lid=0.1, backend="triton", device=DEVICE, lattice=D3Q19, shifted=False):
    """Plane Couette flow: a resting wall at y = 0, the lid at y = n moving along x at u_lid, periodic in x
    and z. The steady flow is u_x = u_lid y / n, which half-way bounce-back represents exactly in exact
    arithmetic; run for 20 decay times of the slowest transient, n^2 / (pi^2 nu) steps each.
    Returns (largest |u_x - u_lid y / n| in lid units, relative change of the total mass, steps)."""
    nu = (tau - 0.5) / 3
    steps = round(20 * n * n / (math.pi ** 2 * nu))
    solver = ShiftedLBM if shifted else LBM
    sim = solver(lattice, (2, n, 2), tau, (True, False, True), u_lid=u_lid, backend=backend, device=device).init()
    mass = sim.populations().double().sum().item()
    sim.step(steps)
    drift = sim.populations().double().sum().item() / mass - 1
    y = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    got = sim.moments()[1][0].double().cpu() / u_lid               # (NZ, NY, NX)
    return (got - y[None, :, None]).abs().max().item(), drift, steps


def taylor_green_plane(n, plane="xz", tau=0.8, backend="triton", device=DEVICE):
    """The Taylor-Green vortex of lbm.taylor_green in the plane `plane` of an n x n x 2 box (2 cells along the
    third axis), periodic: u_a = -u0 cos(k a) sin(k b), u_b = u0 sin(k a) cos(k b) for plane "ab", k = 2 pi / n,
    the same diffusive scaling (u0 = 1.6 / n, t = n^2 / 8). Returns the relative L2 error of the velocity."""
    a, b = AXES[plane[0]], AXES[plane[1]]
    size = [2, 2, 2]
    size[a] = size[b] = n
    u0, k, steps = 1.6 / n, 2 * math.pi / n, n * n // 8
    pos = [torch.arange(m, dtype=torch.float64) for m in reversed(size)]   # z, y, x order
    zyx = torch.meshgrid(*pos, indexing="ij")
    xa, xb = zyx[2 - a], zyx[2 - b]
    u = torch.zeros(3, *zyx[0].shape, dtype=torch.float64)
    u[a] = -u0 * torch.cos(k * xa) * torch.sin(k * xb)
    u[b] = u0 * torch.sin(k * xa) * torch.cos(k * xb)
    rho = 1 - 0.75 * u0 ** 2 * (torch.cos(2 * k * xa) + torch.cos(2 * k * xb))
    sim = LBM(D3Q19, tuple(size), tau, (True, True, True), backend=backend, device=device)
    sim.init(rho.float(), u.float()).step(steps)
    exact = u * math.exp(-2 * (tau - 0.5) / 3 * k * k * steps)
    got = sim.moments()[1].double().cpu()
    return ((got - exact).norm() / exact.norm()).item()
# --8<-- [end:cases]


# --8<-- [start:shifted]
class ShiftedLBM(LBM):
    """The PyTorch step of lbm.py computing with departures from rest, h_i = f_i - w_i (Skordos, 1993), in fp32.
    Density is 1 + sum(h), so the mass the weights' rounding creates scales with the density's departure from 1
    (plus terms of order u^2), and each fp32 number spends its bits on the flow rather than on the resting part
    w_i. The same streaming and bounce-back (w_i is the same for i and its opposite, so h bounces as f does);
    the lid term assumes density 1, as in lbm.py."""

    def __init__(self, lattice, shape, tau, periodic=(True, True, True), u_lid=0.0, backend="torch", device="cpu"):
        if backend != "torch":
            raise ValueError(f"ShiftedLBM: only the PyTorch step computes with departures from rest; backend must be "
                             f"'torch', got {backend!r}")
        super().__init__(lattice, shape, tau, periodic, u_lid=u_lid, backend="torch", device=device)

    def departure(self, drho, u):
        """h_i^eq = w_i (drho + rho (3 c_i.u + 4.5 (c_i.u)^2 - 1.5 u.u)), rho = 1 + drho: f_i^eq - w_i, formed without w_i."""
        c = self.lat.c.to(u)
        cu = torch.einsum("ia,azyx->izyx", c, u)
        p = 3 * cu + 4.5 * cu * cu - 1.5 * (u * u).sum(0)
        return self.lat.w.to(u).view(-1, 1, 1, 1) * (drho + (1 + drho) * p)

    def init(self, rho=None, u=None):
        shape = (self.nz, self.ny, self.nx)
        drho = torch.zeros(shape, dtype=torch.float64) if rho is None else rho.double() - 1
        u = torch.zeros((3, *shape), dtype=torch.float64) if u is None else u.double()
        self.f.copy_(self.departure(drho.to(self.device), u.to(self.device)))   # in fp64, then rounded once
        return self

    def populations(self):
        """f_i = w_i + h_i, in fp64: in fp32 the sum would round h_i back to the resolution of w_i."""
        return self.f.double() + self.lat.w.double().to(self.device).view(-1, 1, 1, 1)

    def moments(self):
        drho = self.f.sum(0)
        return 1 + drho, torch.einsum("ia,izyx->azyx", self.lat.c.float().to(self.device), self.f) / (1 + drho)

    def step(self, n=1):
        shifts, wall, lid, opp, c, w, omega = self._torch_args
        for _ in range(n):
            pulled = torch.stack([torch.roll(self.f[i], s, (0, 1, 2)) for i, s in enumerate(shifts)])
            h = torch.where(wall, self.f[opp] + lid, pulled)
            drho = h.sum(0)
            u = torch.einsum("ia,izyx->azyx", c, h) / (1 + drho)
            self.f2.copy_(h + omega * (self.departure(drho, u) - h))
            self.f, self.f2 = self.f2, self.f
        return self
# --8<-- [end:shifted]


if __name__ == "__main__":
    backend = "torch" if INTERPRET or DEVICE == "cpu" else "triton"   # the interpreter is too slow for these
    torch.set_num_threads(min(4, torch.get_num_threads()))
    waves = [shear_wave(n, backend=backend) for n in (16, 32)]
    errs = [w[0] for w in waves]
    print(f"shear wave between z walls, n = 16, 32: error {errs[0]:.2e}, {errs[1]:.2e}, "
          f"order {math.log2(errs[0] / errs[1]):.2f}")
    assert errs[1] < 0.01 and 1.8 < math.log2(errs[0] / errs[1]) < 2.2, errs
    shifted = [shear_wave(n, backend="torch", device="cpu", shifted=True) for n in (16, 32)]   # PyTorch only
    print(f"the same wave computed with departures from rest: error {shifted[0][0]:.2e}, {shifted[1][0]:.2e}; "
          f"at n = 32 the total mass changed by {shifted[1][1]:+.0e}, against {waves[1][1]:+.0e}")
    assert abs(shifted[1][0] / errs[1] - 1) < 0.05 and max(abs(s[1]) for s in shifted) < 1e-8 < waves[1][1], shifted
    dev, drift, _ = couette(8, backend=backend)
    print(f"Couette flow under the lid, n = 8: largest deviation from u_lid y / n {dev:.1e} lid units "
          f"(total mass changed by {drift:+.1e})")
    assert dev < 1e-3, dev
    tg = {p: taylor_green_plane(32, p, backend=backend) for p in ("xy", "xz", "yz")}
    print("Taylor-Green vortex, n = 32: " + ", ".join(f"{p} plane {e:.3e}" for p, e in tg.items()))
    assert max(tg.values()) < 0.01 and max(tg.values()) - min(tg.values()) < 1e-3 * tg["xy"], tg
    print(f"D3Q19's third dimension matches the exact solutions ({backend} step)")
