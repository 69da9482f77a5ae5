"""Lattice Boltzmann (BGK) solver in Triton: D2Q9 and D3Q19, fp32, one fused stream-and-collide kernel.

Pull scheme with two buffers: each cell gathers the post-collision populations of its upstream
neighbours, collides, and writes its own new populations; structure-of-arrays layout f[i, z, y, x].
Walls sit half-way between nodes (half-way bounce-back); the top wall (y = NY side) can move along x
(the lid of a cavity); any axis can be periodic instead. The same step is written in PyTorch
(torch.roll) to validate the physics quickly and to measure against.
Run it: `python snippets/triton_deep_dive/lbm.py` on a GPU, or with TRITON_INTERPRET=1 on a CPU.
"""
# --8<-- [start:lattice]
import math
import os
import time

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET or not torch.cuda.is_available() else "cuda"


class Lattice:
    """Discrete velocities c_i (Q x 3 integers), weights w_i and the opposite direction of each."""

    def __init__(self, name, c, w):
        self.name, self.dim, self.Q = name, 2 if name.startswith("D2") else 3, len(c)
        self.c = torch.tensor(c, dtype=torch.int32)
        self.w = torch.tensor(w, dtype=torch.float64)
        self.opp = torch.tensor([c.index([-a for a in ci]) for ci in c], dtype=torch.int32)
        assert abs(self.w.sum().item() - 1) < 1e-12
        # isotropy up to second order: sum w c_a c_b = cs^2 delta_ab with cs^2 = 1/3
        second = torch.einsum("i,ia,ib->ab", self.w, self.c.double(), self.c.double())
        assert torch.allclose(second[:self.dim, :self.dim], torch.eye(self.dim, dtype=torch.float64) / 3)
        # the same lattice as compile-time constants of the Triton kernel (tuples of Python numbers)
        self.consts = dict(CX=tuple(v[0] for v in c), CY=tuple(v[1] for v in c), CZ=tuple(v[2] for v in c),
                           W=tuple(w), OPP=tuple(self.opp.tolist()))


D2Q9 = Lattice("D2Q9",
               [[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0],
                [1, 1, 0], [-1, 1, 0], [-1, -1, 0], [1, -1, 0]],
               [4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)
D3Q19 = Lattice("D3Q19",
                [[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1],
                 [1, 1, 0], [-1, -1, 0], [1, -1, 0], [-1, 1, 0], [1, 0, 1], [-1, 0, -1], [1, 0, -1],
                 [-1, 0, 1], [0, 1, 1], [0, -1, -1], [0, 1, -1], [0, -1, 1]],
                [1 / 3] + [1 / 18] * 6 + [1 / 36] * 12)
# --8<-- [end:lattice]


# --8<-- [start:kernel]
@triton.jit
def lbm_step_kernel(F_IN, F_OUT,             # (Q, NZ, NY, NX) post-collision populations: read, write
                    NX, NY, NZ, omega,        # omega = 1 / tau, the BGK relaxation rate
                    u_lid,                    # x-velocity of the wall at the top (y = NY side)
                    CX: tl.constexpr, CY: tl.constexpr, CZ: tl.constexpr,  # the lattice as tuples of
                    W: tl.constexpr, OPP: tl.constexpr,                    # compile-time constants
                    BLOCK: tl.constexpr,      # cells per program
                    PX: tl.constexpr, PY: tl.constexpr, PZ: tl.constexpr,  # periodic axes (else walls)
                    F16: tl.constexpr):       # fp16 storage of f_i - w_i (else fp32 storage of f_i)
    n_cells = NX * NY * NZ
    cell = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = cell < n_cells
    x = cell % NX
    y = (cell // NX) % NY
    z = cell // (NX * NY)
    fs = ()                                   # the cell's Q populations, kept in registers
    rho = tl.zeros((BLOCK,), tl.float32)
    jx = tl.zeros((BLOCK,), tl.float32)
    jy = tl.zeros((BLOCK,), tl.float32)
    jz = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(len(W)):         # unrolled: c_i, w_i and the wall tests are constants
        # stream (pull): population i at x came from x - c_i, a constant distance back in memory
        src = cell - (CZ[i] * NY + CY[i]) * NX - CX[i]
        wall = cell < 0                       # all False
        lid = 0.0
        if CX[i] != 0:
            sx = x - CX[i]
            if PX:                            # periodic: wrap around
                src += tl.where(sx < 0, NX, 0) - tl.where(sx >= NX, NX, 0)
            else:
                wall = wall | (sx < 0) | (sx >= NX)
        if CY[i] != 0:
            sy = y - CY[i]
            if PY:
                src += (tl.where(sy < 0, NY, 0) - tl.where(sy >= NY, NY, 0)) * NX
            else:
                wall = wall | (sy < 0) | (sy >= NY)
                if CY[i] < 0 and CX[i] != 0:  # came through the top wall, which moves along x
                    lid = tl.where(sy >= NY, 6.0 * W[i] * CX[i] * u_lid, 0.0)
        if CZ[i] != 0:
            sz = z - CZ[i]
            if PZ:
                src += (tl.where(sz < 0, NZ, 0) - tl.where(sz >= NZ, NZ, 0)) * (NX * NY)
            else:
                wall = wall | (sz < 0) | (sz >= NZ)
        f = tl.load(F_IN + i * n_cells + src, mask=live & ~wall, other=0.0).to(tl.float32)
        if (CX[i] != 0 and not PX) or (CY[i] != 0 and not PY) or (CZ[i] != 0 and not PZ):
            # half-way bounce-back: what left this cell towards the wall comes back reversed
            back = tl.load(F_IN + OPP[i] * n_cells + cell, mask=live & wall, other=0.0).to(tl.float32)
            f = tl.where(wall, back + lid, f)
        if F16:
            f += W[i]                         # stored shifted by the rest state w_i
        fs = fs + (f,)
        rho += f
        if CX[i] != 0:                        # momentum: only the directions that have a component
            jx += CX[i] * f
        if CY[i] != 0:
            jy += CY[i] * f
        if CZ[i] != 0:
            jz += CZ[i] * f
    # collide (BGK): relax towards the second-order equilibrium
    rho = tl.where(live, rho, 1.0)            # padding cells past the grid: no 0/0
    ux = jx / rho
    uy = jy / rho
    uz = jz / rho
    base = 1.0 - 1.5 * (ux * ux + uy * uy + uz * uz)
    for i in tl.static_range(len(W)):
        cu = CX[i] * ux + CY[i] * uy + CZ[i] * uz
        feq = W[i] * rho * (base + 3.0 * cu + 4.5 * cu * cu)
        out = fs[i] + omega * (feq - fs[i])
        if F16:
            out -= W[i]
        tl.store(F_OUT + i * n_cells + cell, out.to(F_OUT.dtype.element_ty), mask=live)
# --8<-- [end:kernel]


# --8<-- [start:kernel_tile]
@triton.jit
def lbm_tile_kernel(F_IN, F_OUT,            # (Q, NZ, NY, NX) fp32 post-collision populations: read, write
                    CX, CY, CZ, W, OPP,      # the lattice: velocities (int32), weights (fp32), opposite index
                    NX, NY, NZ, omega,       # omega = 1 / tau, the BGK relaxation rate
                    u_lid,                   # x-velocity of the wall at the top (y = NY side)
                    Q: tl.constexpr, QP: tl.constexpr,  # QP: Q rounded up to a power of two
                    BLOCK: tl.constexpr,     # cells per program
                    PX: tl.constexpr, PY: tl.constexpr, PZ: tl.constexpr):   # periodic axes (else walls)
    n_cells = NX * NY * NZ
    cell = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = cell < n_cells
    x = cell % NX
    y = (cell // NX) % NY
    z = cell // (NX * NY)
    i = tl.arange(0, QP)
    qm = i < Q
    cx = tl.load(CX + i, mask=qm, other=0)[:, None]
    cy = tl.load(CY + i, mask=qm, other=0)[:, None]
    cz = tl.load(CZ + i, mask=qm, other=0)[:, None]
    w = tl.load(W + i, mask=qm, other=0.0)[:, None]
    opp = tl.load(OPP + i, mask=qm, other=0)[:, None]
    m = qm[:, None] & live[None, :]                        # (QP, BLOCK): direction i of each cell

    # stream (pull): population i at x came from the neighbour x - c_i, `shift` cells back in memory;
    # written as cell - shift, the address stays contiguous along the cells (coalesced loads)
    src = cell[None, :] - (cz * NY + cy) * NX - cx
    sx = x[None, :] - cx
    sy = y[None, :] - cy
    sz = z[None, :] - cz
    wall = sx != sx                                         # all False, shape (QP, BLOCK)
    if PX:   # periodic: wrap around (this breaks the contiguity, only for periodic axes)
        src += tl.where(sx < 0, NX, 0) - tl.where(sx >= NX, NX, 0)
    else:
        wall = wall | (sx < 0) | (sx >= NX)
    if PY:
        src += (tl.where(sy < 0, NY, 0) - tl.where(sy >= NY, NY, 0)) * NX
    else:
        wall = wall | (sy < 0) | (sy >= NY)
    if PZ:
        src += (tl.where(sz < 0, NZ, 0) - tl.where(sz >= NZ, NZ, 0)) * (NX * NY)
    else:
        wall = wall | (sz < 0) | (sz >= NZ)
    f_pull = tl.load(F_IN + i[:, None] * n_cells + src, mask=m & ~wall, other=0.0)
    # half-way bounce-back: the population that left this cell towards the wall comes back reversed;
    # a moving wall adds momentum 2 w_i rho (c_i . u_w) / cs^2 (rho = 1)
    f_back = tl.load(F_IN + opp * n_cells + cell[None, :], mask=m & wall, other=0.0)
    if PY:   # no wall at the top: nothing to move (a wall hit along x or z must not get the lid term)
        f = tl.where(wall, f_back, f_pull)
    else:
        lid = tl.where(sy >= NY, 6.0 * w * cx.to(tl.float32) * u_lid, 0.0)
        f = tl.where(wall, f_back + lid, f_pull)

    # collide (BGK): relax towards the second-order equilibrium
    rho = tl.where(live, tl.sum(f, 0), 1.0)               # padding cells past the grid: no 0/0
    ux = tl.sum(f * cx.to(tl.float32), 0) / rho
    uy = tl.sum(f * cy.to(tl.float32), 0) / rho
    uz = tl.sum(f * cz.to(tl.float32), 0) / rho
    cu = cx.to(tl.float32) * ux[None, :] + cy.to(tl.float32) * uy[None, :] + cz.to(tl.float32) * uz[None, :]
    usq = (ux * ux + uy * uy + uz * uz)[None, :]
    feq = w * rho[None, :] * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * usq)
    tl.store(F_OUT + i[:, None] * n_cells + cell[None, :], f + omega * (feq - f), mask=m)
# --8<-- [end:kernel_tile]


# --8<-- [start:solver]
CELL_BLOCK, CELL_WARPS = 256, 4     # two cells per thread: the sweep of "Speed" on the H200 chose it
class LBM:
    """Populations f (Q, NZ, NY, NX); `step(n)` advances n time steps with the chosen backend.

    storage=torch.float16 (Triton only) keeps f_i - w_i in fp16, half the bytes of fp32 storage;
    kernel="tile" runs the first version of the kernel (one (QP, BLOCK) tile per program)."""

    def __init__(self, lattice, shape, tau, periodic=(True, True, True), u_lid=0.0, backend="triton",
                 device=DEVICE, block=None, num_warps=None, storage=torch.float32, kernel="cell"):
        if not isinstance(lattice, Lattice):
            raise ValueError(f"LBM: lattice must be D2Q9 or D3Q19 (a Lattice of this module), got {lattice!r}")
        given = tuple(shape)
        shape = (*given, 1) if lattice.dim == 2 and len(given) == 2 else given
        if len(shape) != 3 or not all(isinstance(n, int) and n >= 1 for n in shape):
            want = "(NX, NY, NZ)" if lattice.dim == 3 else "(NX, NY) or (NX, NY, NZ)"
            raise ValueError(f"LBM: {lattice.name} needs a shape {want} of positive integers, got {given}")
        if len(tuple(periodic)) != 3 and not (lattice.dim == 2 and len(tuple(periodic)) == 2):
            raise ValueError(f"LBM: periodic needs one flag per axis (x, y[, z]), got {periodic!r}")
        if not tau > 0.5:
            raise ValueError(f"LBM: tau = {tau} gives a viscosity nu = (tau - 1/2)/3 <= 0; tau must exceed 0.5")
        if backend not in ("triton", "torch"):
            raise ValueError(f"LBM: backend must be 'triton' or 'torch', got {backend!r}")
        if backend == "triton" and not INTERPRET and torch.device(device).type != "cuda":
            raise ValueError("LBM: the triton backend needs a CUDA device (or TRITON_INTERPRET=1 on the CPU)")
        if kernel not in ("cell", "tile"):
            raise ValueError(f"LBM: kernel must be 'cell' or 'tile', got {kernel!r}")
        if storage not in (torch.float32, torch.float16):
            raise ValueError(f"LBM: storage must be torch.float32 or torch.float16, got {storage}")
        if storage == torch.float16 and (backend != "triton" or kernel != "cell"):
            raise ValueError("LBM: fp16 storage is implemented by the Triton 'cell' kernel only")
        self.lat, self.tau, self.u_lid, self.backend, self.device = lattice, float(tau), float(u_lid), backend, device
        self.kernel, self.storage = kernel, storage
        self.nx, self.ny, self.nz = shape
        periodic = tuple(bool(p) for p in periodic) + (False,) * (3 - len(tuple(periodic)))
        # 2-D: one z layer that no velocity leaves (c_z = 0), so z needs neither wrap nor wall code
        self.periodic = periodic[:2] + (False,) if lattice.dim == 2 else periodic[:3]
        if lattice.Q * self.nx * self.ny * self.nz >= 2 ** 31:
            raise ValueError(f"LBM: {lattice.Q} x {shape} populations overflow the kernel's int32 offsets")
        lat = lattice
        # the tile kernel reads the lattice from tensors; the cell kernel gets lattice.consts
        self.cx, self.cy, self.cz = (lat.c[:, a].contiguous().to(device) for a in range(3))
        self.w = lat.w.float().to(device)
        self.opp = lat.opp.to(device)
        self.f = torch.empty((lat.Q, self.nz, self.ny, self.nx), dtype=storage, device=device)
        self.f2 = torch.empty_like(self.f)
        # cells per program and warps: the fastest shape of the sweep on the H200 (see "Speed")
        self.block = block or (CELL_BLOCK if kernel == "cell" else 512)
        self.num_warps = num_warps or (CELL_WARPS if kernel == "cell" else 4)
        if INTERPRET:
            self.block = 32
        if backend == "torch":
            self._torch_setup()

    def populations(self):
        """f_i in fp32, whatever the storage."""
        if self.storage == torch.float16:
            return self.f.float() + self.w[:, None, None, None]
        return self.f

    def set_populations(self, f):
        if tuple(f.shape) != tuple(self.f.shape):
            raise ValueError(f"LBM: populations must have shape (Q, NZ, NY, NX) = {tuple(self.f.shape)}, "
                             f"got {tuple(f.shape)}")
        if self.storage == torch.float16:
            f = f - self.w[:, None, None, None]
        self.f.copy_(f)
        return self

    def equilibrium(self, rho, u):
        """f_i^eq for density rho (NZ, NY, NX) and velocity u (3, NZ, NY, NX)."""
        c = self.lat.c.float().to(self.device)
        cu = torch.einsum("ia,azyx->izyx", c, u)
        usq = (u * u).sum(0)
        return self.w[:, None, None, None] * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * usq)

    def init(self, rho=None, u=None):
        shape = (self.nz, self.ny, self.nx)
        for name, t, want in (("rho", rho, shape), ("u", u, (3, *shape))):
            if t is not None and tuple(t.shape) != want:
                raise ValueError(f"LBM.init: {name} must have shape {want} (z, y, x order), got {tuple(t.shape)}")
        rho = torch.ones(shape, device=self.device) if rho is None else rho.to(self.device, torch.float32)
        u = torch.zeros((3, *shape), device=self.device) if u is None else u.to(self.device, torch.float32)
        return self.set_populations(self.equilibrium(rho, u))

    def moments(self):
        """Density and velocity; BGK conserves both, so post-collision populations give the same moments."""
        c = self.lat.c.float().to(self.device)
        f = self.populations()
        rho = f.sum(0)
        return rho, torch.einsum("ia,izyx->azyx", c, f) / rho

    def step(self, n=1):
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"LBM.step: n is a number of time steps, an integer >= 0; got {n!r}")
        for _ in range(n):
            grid = (triton.cdiv(self.nx * self.ny * self.nz, self.block),)
            if self.backend == "triton" and self.kernel == "cell":
                lbm_step_kernel[grid](self.f, self.f2, self.nx, self.ny, self.nz, 1.0 / self.tau, self.u_lid,
                                      **self.lat.consts, BLOCK=self.block, PX=self.periodic[0], PY=self.periodic[1],
                                      PZ=self.periodic[2], F16=self.storage == torch.float16,
                                      num_warps=self.num_warps)
            elif self.backend == "triton":
                lbm_tile_kernel[grid](self.f, self.f2, self.cx, self.cy, self.cz, self.w, self.opp,
                                      self.nx, self.ny, self.nz, 1.0 / self.tau, self.u_lid,
                                      Q=self.lat.Q, QP=triton.next_power_of_2(self.lat.Q), BLOCK=self.block,
                                      PX=self.periodic[0], PY=self.periodic[1], PZ=self.periodic[2],
                                      num_warps=self.num_warps)
            else:
                torch_step(self.f, self.f2, *self._torch_args)
            self.f, self.f2 = self.f2, self.f                  # ping-pong: never read what this step writes
        return self
# --8<-- [end:solver]

    # --8<-- [start:torch]
    def _torch_setup(self):
        """Wall masks and the lid term of the PyTorch step, each stored along the one axis it depends on."""
        lat, dev = self.lat, self.device
        shifts = [tuple(int(v) for v in (lat.c[i, 2], lat.c[i, 1], lat.c[i, 0])) for i in range(lat.Q)]
        sizes = (self.nz, self.ny, self.nx)
        wall = torch.zeros((lat.Q, self.nz, self.ny, self.nx), dtype=torch.bool)
        for axis, (n, per) in enumerate(zip(sizes, (self.periodic[2], self.periodic[1], self.periodic[0]))):
            if per:
                continue
            pos = torch.arange(n)
            for i in range(lat.Q):
                src = pos - shifts[i][axis]
                out = (src < 0) | (src >= n)
                wall[i] |= out.view(*[n if a == axis else 1 for a in range(3)])
        lid = torch.zeros((lat.Q, 1, self.ny, 1))
        if not self.periodic[1]:
            for i in range(lat.Q):
                if lat.c[i, 1] < 0:       # arrives from above the top row: crossed the lid
                    lid[i, 0, -1, 0] = 6 * lat.w[i].item() * lat.c[i, 0].item() * self.u_lid
        self._torch_args = (shifts, wall.to(dev), lid.to(dev), self.opp.long(), lat.c.float().to(dev),
                            self.w.view(-1, 1, 1, 1), 1.0 / self.tau)


def torch_step(f, out, shifts, wall, lid, opp, c, w, omega):
    """The same pull stream-and-collide step in PyTorch: torch.roll streams, masks bounce back."""
    pulled = torch.stack([torch.roll(f[i], s, (0, 1, 2)) for i, s in enumerate(shifts)])
    f = torch.where(wall, f[opp] + lid, pulled)
    rho = f.sum(0)
    u = torch.einsum("ia,izyx->azyx", c, f) / rho
    cu = torch.einsum("ia,azyx->izyx", c, u)
    feq = w * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * (u * u).sum(0))
    out.copy_(f + omega * (feq - f))
    # --8<-- [end:torch]


# --8<-- [start:taylor_green]
TAU_MIN, MACH_MAX = 0.51, 0.3        # BGK loses stability as tau -> 1/2; compressibility error ~ Ma^2
def taylor_green(n, tau=0.8, u0=None, lattice=D2Q9, backend="triton", device=DEVICE, nz=1, storage=torch.float32):
    """Decaying Taylor-Green vortex on a periodic n x n grid (x nz for D3Q19), run to t = n^2/8 steps.

    Diffusive scaling: tau (so nu) fixed, u0 ~ 1/n, steps ~ n^2, so the Mach number falls with n and
    the error of a second-order scheme falls by 4x per grid doubling. Returns the relative L2
    velocity error against u(t) = u(0) exp(-2 nu k^2 t)."""
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"taylor_green: n must be an integer of at least 2 cells per side, got {n!r}")
    u0 = 0.05 * 32 / n if u0 is None else u0
    if abs(u0) * math.sqrt(3) > MACH_MAX:
        raise ValueError(f"taylor_green: u0 = {u0:.3f} is Mach {abs(u0) * math.sqrt(3):.2f} > {MACH_MAX} "
                         f"(the default u0 = 1.6 / n needs n >= {math.ceil(1.6 * math.sqrt(3) / MACH_MAX)}); "
                         "use a larger n or a smaller u0")
    k = 2 * math.pi / n
    pos = torch.arange(n, dtype=torch.float64)
    Y, X = torch.meshgrid(pos, pos, indexing="ij")
    ux = -u0 * torch.cos(k * X) * torch.sin(k * Y)
    uy = u0 * torch.sin(k * X) * torch.cos(k * Y)
    rho = 1 - 0.75 * u0 ** 2 * (torch.cos(2 * k * X) + torch.cos(2 * k * Y))  # p = rho cs^2, cs^2 = 1/3
    u = torch.stack([ux, uy, torch.zeros_like(ux)])[:, None].expand(3, nz, n, n)
    sim = LBM(lattice, (n, n, nz), tau, (True, True, True), backend=backend, device=device, storage=storage)
    sim.init(rho[None].expand(nz, n, n).float(), u.float())
    steps = n * n // 8
    sim.step(steps)
    nu = (tau - 0.5) / 3
    decay = math.exp(-2 * nu * k * k * steps)
    exact = (u * decay).to(device)
    got = sim.moments()[1].double()
    return ((got - exact).norm() / exact.norm()).item()
# --8<-- [end:taylor_green]


# --8<-- [start:cavity]
# Ghia, Ghia & Shin (1982), J. Comput. Phys. 48, 387-411, Tables I and II, Re = 100 (published
# reference values of a 129 x 129 multigrid solution, not measured here): u/U on the vertical
# centre line x = 0.5 against y, and v/U on the horizontal centre line y = 0.5 against x.
GHIA_RE100_U = [(1.0000, 1.00000), (0.9766, 0.84123), (0.9688, 0.78871), (0.9609, 0.73722),
                (0.9531, 0.68717), (0.8516, 0.23151), (0.7344, 0.00332), (0.6172, -0.13641),
                (0.5000, -0.20581), (0.4531, -0.21090), (0.2813, -0.15662), (0.1719, -0.10150),
                (0.1016, -0.06434), (0.0703, -0.04775), (0.0625, -0.04192), (0.0547, -0.03717),
                (0.0000, 0.00000)]
GHIA_RE100_V = [(1.0000, 0.00000), (0.9688, -0.05906), (0.9609, -0.07391), (0.9531, -0.08864),
                (0.9453, -0.10313), (0.9063, -0.16914), (0.8594, -0.22445), (0.8047, -0.24533),
                (0.5000, 0.05454), (0.2344, 0.17527), (0.2266, 0.17507), (0.1563, 0.16077),
                (0.0938, 0.12317), (0.0781, 0.10890), (0.0703, 0.10091), (0.0625, 0.09233),
                (0.0000, 0.00000)]


def cavity_parameters(re, n, u_lid=0.1):
    """tau from Re = U n / nu and nu = (tau - 1/2) / 3; refuses parameters BGK cannot run."""
    if re <= 0 or n < 8:
        raise ValueError(f"cavity: need Re > 0 and n >= 8 cells, got Re={re}, n={n}")
    mach = u_lid * math.sqrt(3)
    if mach > MACH_MAX:
        raise ValueError(f"cavity: lid speed {u_lid} is Mach {mach:.2f} (U / cs, cs = 1/sqrt 3) > {MACH_MAX}: "
                         f"compressibility errors grow as Ma^2; use a lid speed <= {MACH_MAX / math.sqrt(3):.3f}")
    tau = 3 * u_lid * n / re + 0.5
    if tau < TAU_MIN:
        n_min = math.ceil(re * (TAU_MIN - 0.5) / (3 * u_lid))
        raise ValueError(f"cavity: Re={re} on n={n} cells at lid speed {u_lid} gives tau = {tau:.4f}, too close "
                         f"to 0.5 for BGK (unstable below about {TAU_MIN}); use n >= {n_min} or a larger lid speed")
    return tau


def cavity(re=100.0, n=128, u_lid=0.1, steps=None, tol=1e-6, check_every=500, backend="triton", device=DEVICE,
           max_steps=2_000_000, storage=torch.float32):
    """Lid-driven square cavity (D2Q9, walls on all sides, lid at y = 1 moving in +x) to a steady state."""
    tau = cavity_parameters(re, n, u_lid)
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"cavity: steps must be an integer >= 1, or None to run until the change per step < tol; "
                         f"got {steps!r}")
    if not isinstance(check_every, int) or check_every < 1:
        raise ValueError(f"cavity: check_every must be an integer >= 1, got {check_every!r}")
    if steps is None and not tol > 0:
        raise ValueError(f"cavity: tol must be > 0 when steps is None (the run stops when the change per step < tol), "
                         f"got {tol!r}")
    sim = LBM(D2Q9, (n, n), tau, periodic=(False, False, False), u_lid=u_lid, backend=backend, device=device,
              storage=storage).init()
    history, done, prev = [], 0, sim.moments()[1]
    t0 = time.perf_counter()
    last = max_steps if steps is None else steps
    while done < last:
        k = min(check_every, last - done)
        sim.step(k)
        done += k
        u = sim.moments()[1]
        res = ((u - prev).abs().max() / u_lid / k).item()    # change of the velocity per step, in lid units
        history.append((done, res))
        prev = u
        if not math.isfinite(res):
            raise FloatingPointError(f"cavity: the solution blew up after {done} steps (tau = {tau:.4f})")
        if steps is None and res < tol:
            break
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    u = sim.moments()[1][:, 0].double().cpu() / u_lid                 # (3, NY, NX), in lid units
    pos = (torch.arange(n, dtype=torch.float64) + 0.5) / n            # node centres; walls at 0 and 1
    mid = n // 2
    u_line = (u[0, :, mid - 1] + u[0, :, mid]) / 2 if n % 2 == 0 else u[0, :, mid]   # on x = 0.5
    v_line = (u[1, mid - 1, :] + u[1, mid, :]) / 2 if n % 2 == 0 else u[1, mid, :]   # on y = 0.5
    return {"re": re, "n": n, "u_lid": u_lid, "tau": tau, "steps": done, "seconds": seconds,
            "mlups": n * n * done / seconds / 1e6, "residual": history, "pos": pos.tolist(),
            "u_centre": u_line.tolist(), "v_centre": v_line.tolist(), "speed": u[:2].norm(dim=0).tolist(),
            "ghia_dev_u": ghia_deviation(pos, u_line, GHIA_RE100_U, 1.0) if re == 100 else None,
            "ghia_dev_v": ghia_deviation(pos, v_line, GHIA_RE100_V, 0.0) if re == 100 else None}


def ghia_deviation(pos, line, table, top):
    """Largest |ours - Ghia| at Ghia's points, in lid units; walls added (0 at 0, `top` at 1) to interpolate."""
    import numpy as np
    xs = np.concatenate([[0.0], np.asarray(pos), [1.0]])
    ys = np.concatenate([[0.0], np.asarray(line), [top]])
    return max(abs(float(np.interp(p, xs, ys)) - ref) for p, ref in table)
# --8<-- [end:cavity]


# --8<-- [start:check]
def check_kernel_against_torch(lattice, shape, periodic, u_lid, steps=3, **kw):
    """The Triton step and the PyTorch step from the same random state: same populations (fp32 storage
    to 1e-6; fp16 storage of f_i - w_i to 1e-4, its rounding)."""
    torch.manual_seed(0)
    a = LBM(lattice, shape, 0.7, periodic, u_lid, backend="triton", **kw)
    b = LBM(lattice, shape, 0.7, periodic, u_lid, backend="torch", device=a.device)
    dev = a.device
    state = a.equilibrium(torch.ones(a.f.shape[1:], device=dev), 0.05 * torch.randn(3, *a.f.shape[1:], device=dev))
    state *= 1 + 0.01 * torch.rand(a.f.shape, device=dev)
    a.set_populations(state)
    b.set_populations(a.populations())
    a.step(steps)
    b.step(steps)
    err = (a.populations() - b.populations()).abs().max().item()
    assert err < (1e-4 if a.storage == torch.float16 else 1e-6), (lattice.name, shape, periodic, kw, err)
    return err


if __name__ == "__main__":
    small = INTERPRET
    for kw in ({}, {"kernel": "tile"}, {"storage": torch.float16}):
        check_kernel_against_torch(D2Q9, (12, 10) if small else (300, 200), (False, False, True), 0.1, **kw)
        check_kernel_against_torch(D2Q9, (9, 8) if small else (256, 100), (True, True, True), 0.0, **kw)
        check_kernel_against_torch(D3Q19, (6, 5, 4) if small else (64, 48, 40), (False, False, False), 0.1, **kw)
        check_kernel_against_torch(D3Q19, (5, 4, 6) if small else (40, 32, 64), (True, False, True), 0.05, **kw)
    print("Triton steps (cell and tile kernels, fp32 and fp16 storage) match the PyTorch step: "
          "D2Q9 and D3Q19, walls, lid, periodic")
    if not small:
        print(f"Taylor-Green D2Q9 n=64: relative velocity error {taylor_green(64):.2e}")
# --8<-- [end:check]
