"""Will this binary run on this GPU?  The triage for "no kernel image is available".

    python3 snippets/cuda_compilation_pipeline/triage.py BINARY [--cc 9.0]

Reads the SASS and PTX targets a binary (executable, .so, .o, .fatbin or .cubin) carries with
cuobjdump, takes the GPU's compute capability from nvidia-smi (or --cc), and applies the rules:
SASS runs on the same major version at the same or a later minor one ('a' SASS: that exact
version; 'f' SASS: the same family); PTX is JIT-compiled for any later GPU ('a' PTX: that exact
version; 'f' PTX: the family), provided the driver accepts its ISA version.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess


def target(name: str) -> tuple[int, int, str]:
    """'sm_100f' -> (10, 0, 'f'); 'compute_90a' -> (9, 0, 'a')."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+?)(\d)([af]?)", name)
    if not m:
        raise ValueError(f"not a target name: {name!r}")
    return int(m.group(1)), int(m.group(2)), m.group(3)


def contents(binary: str) -> tuple[list[str], list[str]]:
    """The SASS and PTX targets in `binary`, as cuobjdump reports them."""
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        raise SystemExit("triage: cuobjdump is not on PATH (it comes with nvcc: pip install -r requirements-cuda.txt)")
    dump = subprocess.run([cuobjdump, "--dump-elf", binary], capture_output=True, text=True)
    if "Could not open" in dump.stderr:
        raise SystemExit(f"triage: cannot read {binary!r}: {dump.stderr.strip()}")
    # each image's header names its exact target (--list-elf calls an sm_100f cubin sm_100)
    sass = re.findall(r"^Fatbin elf code:\n=+\narch = (sm_\w+)$", dump.stdout, re.M)
    ptx = ["compute_" + t[3:] for t in re.findall(r"^Fatbin ptx code:\n=+\narch = (sm_\w+)$", dump.stdout, re.M)]
    return sorted(set(sass), key=target), sorted(set(ptx), key=target)


def verdict(sass: list[str], ptx: list[str], cc: tuple[int, int]) -> str:
    """'sass' (runs its SASS), 'jit' (the driver compiles its PTX) or 'none' (no kernel image)."""
    def fits(name, jit):
        major, minor, suffix = target(name)
        if suffix == "a":
            return (major, minor) == cc
        if suffix == "f" or not jit:
            return major == cc[0] and minor <= cc[1]
        return (major, minor) <= cc
    if any(fits(t, jit=False) for t in sass):
        return "sass"
    if any(fits(t, jit=True) for t in ptx):
        return "jit"
    return "none"


def gpu_cc() -> tuple[int, int]:
    """The compute capability of GPU 0, from nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        raise SystemExit("triage: no nvidia-smi here; pass the GPU's compute capability, e.g. --cc 9.0")
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.split()
    if not out:
        raise SystemExit("triage: nvidia-smi reported no GPU; pass --cc, e.g. --cc 9.0")
    return parse_cc(out[0])


def parse_cc(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a compute capability such as 9.0 or 12.1, got {text!r}")
    return int(m.group(1)), int(m.group(2))


GPUS = [("A100", (8, 0)), ("L4", (8, 9)), ("H200", (9, 0)), ("B200", (10, 0)), ("B300", (10, 3)),
        ("Thor", (11, 0)), ("RTX 5090", (12, 0)), ("GB10", (12, 1))]


def table(binaries: list[str]) -> str:
    """What each GPU of GPUS does with each binary: SASS, JIT (compiles the PTX) or - (no kernel image)."""
    word = {"sass": "SASS", "jit": "JIT", "none": "-"}
    width = max(len(b) for b in binaries)
    rows = [" ".join([f"{'':<{width}}", *(f"{name:>8}" for name, _ in GPUS)]),
            " ".join([f"{'':<{width}}", *(f"{f'{cc[0]}.{cc[1]}':>8}" for _, cc in GPUS)])]
    for b in binaries:
        sass, ptx = contents(b)
        rows.append(" ".join([f"{b:<{width}}", *(f"{word[verdict(sass, ptx, cc)]:>8}" for _, cc in GPUS)]))
    return "\n".join(rows)


def self_check() -> int:
    """The rules on the cases the page measures or cites."""
    cases = [((["sm_80"], [], (9, 0)), "none"),               # SASS never crosses a major version
             ((["sm_80"], ["compute_80"], (9, 0)), "jit"),     # PTX goes forward
             ((["sm_86"], [], (8, 9)), "sass"),                # a later minor of the same major
             ((["sm_90a"], ["compute_90a"], (10, 0)), "none"),  # 'a': that compute capability only
             ((["sm_100f"], [], (10, 3)), "sass"),             # 'f': the 10.x family
             ((["sm_100"], [], (12, 0)), "none"),              # 12.0 is not in the 10.x family
             (([], ["compute_100"], (12, 0)), "jit")]
    for args, want in cases:
        got = verdict(*args)
        assert got == want, f"verdict{args} = {got!r}, expected {want!r}"
    print(f"{len(cases)} rule cases agree")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", help="without one, the script checks its rules on known cases")
    ap.add_argument("--cc", type=parse_cc, help="compute capability of the target GPU (default: GPU 0, from nvidia-smi)")
    ap.add_argument("--table", nargs="+", metavar="BINARY", help="instead: a table of several binaries on eight GPUs")
    args = ap.parse_args(argv)
    if args.table:
        print(table(args.table))
        return 0
    if args.binary is None:
        return self_check()
    cc = args.cc or gpu_cc()
    sass, ptx = contents(args.binary)
    v = verdict(sass, ptx, cc)
    why = {"sass": "runs its SASS",
           "jit": "no SASS fits: the driver JIT-compiles its PTX (if the PTX ISA is not newer than the driver)",
           "none": "no SASS fits and no PTX can be JIT-compiled: cudaErrorNoKernelImageForDevice"}[v]
    print(f"{args.binary}: SASS {' '.join(sass) or '-'}; PTX {' '.join(ptx) or '-'}")
    print(f"on compute capability {cc[0]}.{cc[1]}: {why}")
    return 0 if v != "none" else 2


if __name__ == "__main__":
    raise SystemExit(main())
