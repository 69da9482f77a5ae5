#!/usr/bin/env python3
"""The pinned CUDA toolchain, and the artifacts of the page "CUDA Compilation Pipeline Deep Dive".

    python scripts/measure/cuda_compilation_pipeline/_pipeline.py bin                # the toolchain's bin folder (nvcc, ptxas, cuobjdump, nvdisasm)
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py lib                # its library folder: link with -L<lib>
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py archs              # the targets this nvcc accepts
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py check-arch sm_90a  # exit 1, listing the valid ones, if nvcc would refuse it
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py artifacts [--out-dir DIR] [--only NAME ...]
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py run-block run_h200.sh compat   # one block of the page, as shown there
    python scripts/measure/cuda_compilation_pipeline/_pipeline.py newer-ptx [--out FILE]   # needs network: nvcc 13.5 into a temporary folder

The toolchain is the set of PyPI wheels in requirements-cuda.txt (nvidia-cuda-nvcc 13.0.x and its
companions), found inside the Python environment that runs this script; where they are not
installed, a system nvcc on PATH (or /usr/local/cuda, as on a standard CUDA image) of the same
release. CUDA_PIPELINE_HOME=<a CUDA install> overrides both. Whatever is chosen must be release 13.0,
the CUDA version of the H200's driver; another release is an error that names both versions.
`python -m measure.cuda_compilation_pipeline._pipeline which` prints the choice.

`artifacts` runs the shell sections of snippets/cuda_compilation_pipeline/*.sh (exactly the
blocks the page shows), normalizes what they print (temporary folders, the toolchain's
location, compile times) and writes data/cuda_compilation_pipeline/ir/<name>.txt.
tests/test_cuda_compilation_pipeline.py regenerates them and fails if they differ.
"""
from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sitekit import ROOT  # noqa: E402

SNIPPETS = ROOT / "snippets" / "cuda_compilation_pipeline"
IR = ROOT / "data" / "cuda_compilation_pipeline" / "ir"
RELEASE = "13.0"                     # the CUDA version of the H200's driver (580.x)
INSTALL = "pip install -r requirements-cuda.txt"
NEWER_NVCC = "13.5.37"               # a newer PyPI nvcc, for the PTX the driver refuses


class ToolchainError(RuntimeError):
    """The pinned toolchain is missing or is the wrong release; the message says what to install."""


@dataclass(frozen=True)
class Toolchain:
    root: Path        # holds bin/ (and lib/ or lib64/)
    bin: Path
    lib: Path
    release: str      # "13.0"
    version: str      # "V13.0.88"
    source: str       # "PyPI wheels in <site-packages>" or "CUDA_PIPELINE_HOME=<path>"

    def tool(self, name: str) -> str:
        p = self.bin / name
        if not p.is_file():
            pkg = {"cuobjdump": "nvidia-cuda-cuobjdump", "nvdisasm": "nvidia-cuda-nvdisasm"}.get(name, "nvidia-cuda-nvcc")
            raise ToolchainError(f"{name} not found in {self.bin} ({self.source}); install {pkg}: {INSTALL}")
        return str(p)


def _site_dirs() -> list[Path]:
    dirs = []
    for d in [sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib"),
              *getattr(site, "getsitepackages", lambda: [])(), *sys.path]:
        if d and Path(d).is_dir() and Path(d) not in dirs:
            dirs.append(Path(d))
    return dirs


def _nvcc_release(nvcc: Path, source: str) -> tuple[str, str]:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True)
    m = re.search(r"release (\d+\.\d+), (V[\d.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise ToolchainError(f"{nvcc} --version failed ({source}): {out.stderr.strip()}")
    return m.group(1), m.group(2)


def _system_nvcc() -> Path | None:
    """nvcc on PATH, else the standard CUDA image location."""
    found = shutil.which("nvcc")
    if found:
        return Path(found).resolve()
    default = Path("/usr/local/cuda/bin/nvcc")
    return default if default.is_file() else None


@functools.lru_cache(maxsize=None)
def toolchain() -> Toolchain:
    """Locate an nvcc of release 13.0, the CUDA version of the H200's driver, in this order:
    CUDA_PIPELINE_HOME if set; the pinned PyPI wheels of this Python (requirements-cuda.txt); a system
    nvcc on PATH (or /usr/local/cuda) of the same major.minor. A toolchain of another release is a clear
    error naming both versions: its PTX would be refused by the driver's JIT, or would differ from ours."""
    home = os.environ.get("CUDA_PIPELINE_HOME")
    candidates: list[tuple[Path, str, Path]] = []          # (root, source, lib)
    if home:
        root = Path(home)
        source = f"CUDA_PIPELINE_HOME={home}"
        if not (root / "bin" / "nvcc").is_file():
            raise ToolchainError(f"{source}: no bin/nvcc there. Unset it to use the PyPI wheels ({INSTALL}).")
        candidates.append((root, source, root / "lib64" if (root / "lib64").is_dir() else root / "lib"))
    else:
        for d in _site_dirs():
            root = d / "nvidia" / "cu13"
            if (root / "bin" / "nvcc").is_file():
                candidates.append((root, f"PyPI wheels in {d}", root / "lib"))
                break
        nvcc = _system_nvcc()
        if nvcc is not None:
            root = nvcc.parent.parent
            candidates.append((root, f"system nvcc {nvcc}", root / "lib64" if (root / "lib64").is_dir() else root / "lib"))
    if not candidates:
        raise ToolchainError(
            f"no CUDA {RELEASE} toolchain: neither the PyPI wheels in this Python environment ({sys.prefix}) nor an "
            f"nvcc on PATH. Run `{INSTALL}` (nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime, "
            f"nvidia-cuda-cccl, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), or put a CUDA {RELEASE} nvcc on PATH")
    seen = []
    for root, source, lib in candidates:
        release, version = _nvcc_release(root / "bin" / "nvcc", source)
        if release == RELEASE:
            return Toolchain(root=root, bin=root / "bin", lib=lib, release=release, version=version, source=source)
        seen.append(f"{source} is release {release}")
    raise ToolchainError(f"CUDA toolchain mismatch: this page needs nvcc {RELEASE} (the CUDA version of the H200's "
                         f"driver, whose JIT refuses newer PTX), but {'; '.join(seen)}. Install the pinned wheels "
                         f"(`{INSTALL}`) or put a CUDA {RELEASE} nvcc first on PATH")


# ----------------------------------------------------------------------------- architectures

@functools.lru_cache(maxsize=None)
def archs() -> dict[str, list[str]]:
    """Targets nvcc accepts: real (sm_XY, SASS) and virtual (compute_XY, PTX), with the
    'a' (architecture-specific, 9.0 and up) and 'f' (family, 10.0 and up) suffixes."""
    nvcc = toolchain().tool("nvcc")
    real = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True).stdout.split()
    virt = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout.split()

    def with_suffixes(names):
        out = []
        for a in names:
            cc = int(a.split("_")[1])
            out += [a] + ([a + "a"] if cc >= 90 else []) + ([a + "f"] if cc >= 100 else [])
        return out
    return {"real": with_suffixes(real), "virtual": with_suffixes(virt)}


def check_arch(name: str) -> str:
    """Return `name` if nvcc 13.0 accepts it as a target, else raise ValueError listing the valid ones."""
    a = archs()
    if name in a["real"] or name in a["virtual"]:
        return name
    raise ValueError(f"unknown GPU architecture {name!r}. nvcc {RELEASE} accepts real architectures "
                     f"(SASS): {', '.join(a['real'])}; virtual architectures (PTX): {', '.join(a['virtual'])}")


# ----------------------------------------------------------------------------- gencode combinations

# nvcc target options tried on the page: (name, flags). Both the gencode table (CPU) and the
# H200 runs (scripts/measure/cuda_compilation_pipeline/h200.py) build saxpy.cu with each of them.
COMBOS = [
    ("default", ""),
    ("arch_sm90", "-arch=sm_90"),
    ("arch_compute90", "-arch=compute_90"),
    ("sass90", "-gencode arch=compute_90,code=sm_90"),
    ("ptx90", "-gencode arch=compute_90,code=compute_90"),
    ("sass90_ptx90", "-gencode arch=compute_90,code=[sm_90,compute_90]"),
    ("sass80_sass90_ptx80", "-arch=compute_80 -code=sm_80,sm_90,compute_80"),
    ("sass80", "-gencode arch=compute_80,code=sm_80"),
    ("ptx80", "-gencode arch=compute_80,code=compute_80"),
    ("arch_sm90a", "-arch=sm_90a"),
    ("sass90a", "-gencode arch=compute_90a,code=sm_90a"),
    ("sass100f", "-gencode arch=compute_100f,code=sm_100f"),
    ("arch_sm100f", "-arch=sm_100f"),
    ("all_major", "-arch=all-major"),
]


def _cc(target: str) -> tuple[int, int, str]:
    """'sm_100f' -> (10, 0, 'f'); 'compute_90a' -> (9, 0, 'a')."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+?)(\d)([af]?)", target)
    if not m:
        raise ValueError(f"not a target name: {target!r}")
    return int(m.group(1)), int(m.group(2)), m.group(3)


def sass_runs_on(target: str) -> str:
    """Where SASS for `target` runs: the same major version at the same or a later minor version
    (binary compatibility); an 'a' target only on exactly that version."""
    major, minor, suffix = _cc(target)
    return f"cc = {major}.{minor}" if suffix == "a" else f"{major}.{minor} ≤ cc < {major + 1}.0"


def ptx_jit_on(target: str) -> str:
    """Where PTX for `target` can be JIT-compiled: any later GPU; 'a' only that one; 'f' its family."""
    major, minor, suffix = _cc(target)
    return {"a": f"cc = {major}.{minor}", "f": f"{major}.{minor} ≤ cc < {major + 1}.0"}.get(suffix, f"cc ≥ {major}.{minor}")


def runs_on_cc(sass: list[str], ptx: list[str], cc: tuple[int, int]) -> str:
    """What a GPU of compute capability `cc` does with a binary: 'sass', 'jit' or 'none'."""
    def fits(target, jit):
        major, minor, suffix = _cc(target)
        if suffix == "a":
            return (major, minor) == cc
        if suffix == "f" or not jit:
            return major == cc[0] and minor <= cc[1]
        return (major, minor) <= cc
    if any(fits(t, False) for t in sass):
        return "sass"
    if any(fits(t, True) for t in ptx):
        return "jit"
    return "none"


def fatbin_contents(fatbin: Path) -> tuple[list[str], list[str], str]:
    """The SASS and PTX targets in a fatbin, from cuobjdump: (sass, ptx, listing)."""
    cuobjdump = toolchain().tool("cuobjdump")
    listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(fatbin)], capture_output=True, text=True).stdout
    # --list-elf names a family cubin after its base target (sm_100); the ELF header says sm_100f
    elf = subprocess.run([cuobjdump, "--dump-elf", str(fatbin)], capture_output=True, text=True).stdout
    sass = re.findall(r"^Fatbin elf code:\n=+\narch = (sm_\w+)$", elf, re.M)
    ptx = ["compute_" + t[3:] for t in re.findall(r"^PTX file\s+\d+: \S+\.(sm_\w+)\.ptx$", listing, re.M)]
    order = lambda t: _cc(t)
    return sorted(set(sass), key=order), sorted(set(ptx), key=order), listing


# ----------------------------------------------------------------------------- running the page's shell sections

SECTION = re.compile(r"^# --8<-- \[start:(?P<name>[\w-]+)\]\n(?P<body>.*?)^# --8<-- \[end:(?P=name)\]\n", re.S | re.M)


def sections(path: Path) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in SECTION.finditer(path.read_text(encoding="utf-8"))}


def block_text(script: str, section: str) -> str:
    """What the page's block shows: the environment lines, then the section."""
    env = (SNIPPETS / "env.sh").read_text(encoding="utf-8")
    return env.rstrip("\n") + "\n\n" + sections(SNIPPETS / script)[section]   # the page shows a blank line between


def run_section(script: str, section: str, tmp: Path, extra_env: dict | None = None) -> str:
    """Run one block as the page shows it (bash -euo pipefail from the repository root); return stdout."""
    text = block_text(script, section)
    f = tmp / f"{script}.{section}.sh"
    f.write_text(text, encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(tmp), **(extra_env or {})}
    p = subprocess.run(["bash", "-euo", "pipefail", str(f)], cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{script}:{section} failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def normalize(text: str, tmp: Path | None = None) -> str:
    """Remove what changes from one run or machine to the next; keep everything else verbatim."""
    tc = toolchain()
    repl = [(str(tc.root.resolve()), "<cuda>"), (str(tc.root), "<cuda>"), (str(ROOT), "<repo>")]
    if tmp is not None:
        repl.insert(0, (str(tmp.resolve()), "/tmp"))
        repl.insert(0, (str(tmp), "/tmp"))
    for a, b in repl:
        text = text.replace(a, b)
    text = re.sub(r"/tmp/tmp\.[A-Za-z0-9]+", "/tmp/work", text)                # mktemp -d in env.sh
    text = re.sub(r"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}", "tmpxft_<id>", text)       # nvcc's own temporary names
    text = re.sub(r"--gnu_version=\d+", "--gnu_version=<gcc>", text)            # the host compiler on this machine
    text = re.sub(r"(?m)^ptxas info\s+: Compile time = .*\n", "", text)         # ptxas -v timing
    text = re.sub(r"(?m)^#\$ PATH=.*$", "#$ PATH=<cuda>/nvvm/bin:<cuda>/bin:$PATH", text)
    return text


def versionless(text: str) -> str:
    """For comparisons only: the lines that name a toolchain build."""
    text = re.sub(r"(?m)^.*(Compiler Build ID|Cuda compilation tools|Based on NVVM|^Build cuda_).*$", "<version line>", text)
    return re.sub(r"-D__CUDACC_VER_BUILD__=\d+", "-D__CUDACC_VER_BUILD__=<n>", text)


def dryrun_steps(log: str) -> str:
    """One line per program nvcc runs: the program, the files it reads and the files it writes."""
    out = []
    name = r'"?(?P<f>[^\s"\\]+\.(?:cubin|cu|ii|cpp|c|gpu|ptx|fatbin|module_id|o|stub))(?=[\\"\s,]|$)"?'
    target = r'"?(?P<f>[^\s"]+)"?'
    writes = r'(?:(?<![\w-])-o|--embedded-fatbin=|--gen_c_file_name|--stub_file_name|--module_id_file_name|' \
             r'--gen_device_file_name|--register-link-binaries=)\s*'
    ignore = r'(?:--orig_src_file_name|--orig_src_path_name|--include_file_name)\s*'
    short = lambda f: re.sub(r"^tmpxft_<id>-\d+_", "", Path(f).name)
    for line in log.splitlines():
        if not line.startswith("#$ ") or re.match(r"#\$ [_A-Z][A-Z_]*=", line):
            continue
        cmd = line[3:]
        prog = Path(cmd.split()[0].strip('"').replace("$CICC_PATH/", "")).name
        if prog == "rm":
            continue
        outs = [m.group("f") for m in re.finditer(writes + target, cmd)]
        if "--gen_module_id_file" not in cmd:      # cicc reads the module id that cudafe++ wrote
            outs = [f for f in outs if not f.endswith(".module_id")]
        skip = set(outs) | {m.group("f") for m in re.finditer(ignore + name, cmd)}
        ins = [m.group("f") for m in re.finditer(r'(?<![=\w.-])' + name, cmd) if m.group("f") not in skip]
        ins += [m.group(1) for m in re.finditer(r'file=([^\s",]+)', cmd)]          # fatbinary --image3=...,file=X
        ins = list(dict.fromkeys(short(f) for f in ins))
        outs = list(dict.fromkeys(short(f) for f in outs))
        if prog == "cudafe++":   # it only names the stub file (and #includes it); cicc writes it
            ins, outs = ([f for f in fs if not f.endswith(".stub.c")] for fs in (ins, outs))
        out.append(f"{len(out) + 1:2d}. {prog:<10} {', '.join(ins) or '-'}  ->  {', '.join(outs) or '-'}")
    return "\n".join(out) + "\n"


def cfg_mermaid(dot: str) -> str:
    """nvdisasm -cfg's Graphviz graph as a Mermaid flowchart: one box per basic block, edges as drawn."""
    nodes, edges, order = {}, [], []
    for m in re.finditer(r'^"(?P<id>[^"]+)"\n\[label="\{(?P<label>.*)\}"\]$', dot, re.M):
        fields = re.split(r"\|(?=<\w+>)", m.group("label"))
        lines = []
        for f in fields:
            f = re.sub(r"^<\w+>", "", f)
            for raw in f.split("\\l"):
                t = re.sub(r"\\(.)", r"\1", raw).replace("\t", " ").strip().removesuffix(" ;")
                if t and not t.startswith(".") and not t.endswith(":"):
                    lines.append(t)
        nodes[m.group("id")] = lines
        order.append(m.group("id"))
    for m in re.finditer(r'^"(?P<a>[^"]+)":\w+:\w+ -> "(?P<b>[^"]+)":\w+:\w+', dot, re.M):
        edges.append((m.group("a"), m.group("b")))
    ids = {n: f"B{i}" for i, n in enumerate(order)}
    esc = lambda t: (t.replace("&", "#amp;").replace('"', "#quot;").replace("`", "#96;")
                     .replace("<", "#lt;").replace(">", "#gt;"))
    out = ["flowchart TD"]
    for n in order:
        title = "entry" if n.startswith("_Z") else n
        body = "<br/>".join(esc(l) for l in nodes[n]) or "(empty)"
        out.append(f'  {ids[n]}["<b>{esc(title)}</b><br/>{body}"]')
    for a, b in edges:
        out.append(f"  {ids[a]} --> {ids[b]}")
    return "\n".join(out) + "\n"


# name -> (snippet script, section, post-processing)
ARTIFACTS = {
    "setup": ("stages.sh", "setup", None),
    "dryrun": ("stages.sh", "dryrun", None),
    "keep": ("stages.sh", "keep", None),
    "ptx": ("stages.sh", "ptx", None),
    "sass": ("inspect.sh", "sass", None),
    "nvdisasm": ("inspect.sh", "nvdisasm", None),
    "cfg": ("inspect.sh", "cfg", None),
    "registers": ("registers.sh", "registers", None),
    "vector_sass": ("vector.sh", "vector-sass", None),
    "gencode_list": ("gencode.sh", "gencode", None),
    "wgmma": ("gencode.sh", "wgmma", None),
    "gencode_dropped": ("gencode.sh", "dropped", None),
    "linking_register": ("linking.sh", "register", None),
    "linking_rdc": ("linking.sh", "rdc", None),
    "registers_bounds": ("registers.sh", "bounds-ptx", None),
    "registers_pressure": ("registers.sh", "pressure", None),
    "triage": ("triage.sh", "triage", None),
    "triage_gpus": ("triage.sh", "gpus", None),
}
DERIVED = {"dryrun_steps": ("dryrun", dryrun_steps), "cfg_mermaid": ("cfg", cfg_mermaid)}


def produce(name: str, tmp: Path) -> str:
    script, section, _ = ARTIFACTS[name]
    d = tmp / name
    d.mkdir()
    return normalize(run_section(script, section, d), d)


def write_artifacts(out_dir: Path, only: list[str] | None = None, jobs: int = 2) -> list[Path]:
    names = only or list(ARTIFACTS)
    for n in names:
        if n not in ARTIFACTS:
            raise ValueError(f"unknown artifact {n!r}; known: {', '.join(ARTIFACTS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="cuda_pipeline_") as t:
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            texts = dict(zip(names, ex.map(lambda n: produce(n, Path(t)), names)))
    for n, text in texts.items():
        p = out_dir / f"{n}.txt"
        p.write_text(text, encoding="utf-8")
        written.append(p)
        for dn, (src, fn) in DERIVED.items():
            if src == n:
                q = out_dir / f"{dn}.txt"
                q.write_text(fn(text), encoding="utf-8")
                written.append(q)
    return written


# ----------------------------------------------------------------------------- PTX from a newer nvcc

def newer_ptx(out: Path) -> Path:
    """Compile saxpy.cu to PTX with nvcc 13.5 (fetched from PyPI into a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="nvcc_newer_") as t:
        pkgs = [f"nvidia-cuda-nvcc=={NEWER_NVCC}", f"nvidia-nvvm=={NEWER_NVCC}", f"nvidia-cuda-crt=={NEWER_NVCC}",
                f"nvidia-cuda-runtime=={NEWER_NVCC}"]
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                            "--target", t, *pkgs], capture_output=True, text=True)
        if p.returncode != 0:
            raise ToolchainError(f"could not install nvcc {NEWER_NVCC} from PyPI (network needed): {p.stderr.strip()[-800:]}")
        nvcc = Path(t) / "nvidia" / "cu13" / "bin" / "nvcc"
        out.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run([str(nvcc), "-arch=sm_90", "-ptx", str(SNIPPETS / "saxpy.cu"), "-o", str(out)],
                           capture_output=True, text=True, cwd=t)
        if p.returncode != 0:
            raise RuntimeError(f"nvcc {NEWER_NVCC} failed: {p.stderr}")
    return out


# ----------------------------------------------------------------------------- command line

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    sub.add_parser("bin", help="print the toolchain's bin folder")
    sub.add_parser("which", help="print which toolchain was chosen and why")
    sub.add_parser("lib", help="print the folder of libcudart (link with -L)")
    sub.add_parser("archs", help="list the targets nvcc accepts")
    ca = sub.add_parser("check-arch", help="exit 1 with the valid list if nvcc would refuse this target")
    ca.add_argument("arch")
    art = sub.add_parser("artifacts", help="regenerate data/cuda_compilation_pipeline/ir/*.txt")
    art.add_argument("--out-dir", type=Path, default=IR)
    art.add_argument("--only", nargs="+", metavar="NAME", help=f"some of: {', '.join(ARTIFACTS)}")
    art.add_argument("--jobs", type=int, default=2, help="sections run in parallel (default 2)")
    rs = sub.add_parser("run-block", help="run one shell block of the page (env.sh + a section) and print its output")
    rs.add_argument("script", help="a file in snippets/cuda_compilation_pipeline, e.g. run_h200.sh")
    rs.add_argument("section", help="a section of it, e.g. compat")
    nw = sub.add_parser("newer-ptx", help=f"saxpy.cu compiled to PTX by nvcc {NEWER_NVCC} (needs network)")
    nw.add_argument("--out", type=Path, default=IR / "saxpy_nvcc13.5.ptx")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "bin":
            print(toolchain().bin)
        elif args.cmd == "which":
            t = toolchain()
            print(f"nvcc {t.release} ({t.version}) from {t.source}")
        elif args.cmd == "lib":
            print(toolchain().lib)
        elif args.cmd == "archs":
            a = archs()
            print("real (SASS):   ", " ".join(a["real"]))
            print("virtual (PTX): ", " ".join(a["virtual"]))
        elif args.cmd == "check-arch":
            print(check_arch(args.arch))
        elif args.cmd == "artifacts":
            for p in write_artifacts(args.out_dir, args.only, args.jobs):
                print("wrote", p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
        elif args.cmd == "run-block":
            if not (SNIPPETS / args.script).is_file():
                known = ", ".join(sorted(p.name for p in SNIPPETS.glob("*.sh")))
                raise ValueError(f"no script snippets/cuda_compilation_pipeline/{args.script}; the page's are: {known}")
            if args.section not in sections(SNIPPETS / args.script):
                raise ValueError(f"{args.script} has no section {args.section!r}; it has {', '.join(sections(SNIPPETS / args.script))}")
            text = block_text(args.script, args.section)
            return subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=ROOT).returncode
        elif args.cmd == "newer-ptx":
            print("wrote", newer_ptx(args.out))
    except (ToolchainError, ValueError) as e:
        print(f"cuda_pipeline: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
