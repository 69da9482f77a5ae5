"""Tests of the page pytorch-compile-stack beyond its code blocks.

- The CPU artifacts (FX graphs, Inductor IR before and after fusion, generated C++,
  TORCH_LOGS output) are regenerated with this machine's torch and must match the
  committed files exactly (the script normalizes timestamps, ids, hashes and paths).
- The committed datasets are checked for what the page claims from them: every compiled
  case was checked against eager before it was timed, launch counts add up, every
  workload and mode has a row (measured or explicitly not measured).
- The kernel-launch parser is checked on committed output code, and the scripts reject
  bad arguments with a message.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys

import pytest
from once import shared_once
from sitekit import ROOT
from sitekit.data import load, previous_row

DATA = ROOT / "data" / "pytorch_compile_stack"
IR = DATA / "ir"


def _run(args, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


# ----------------------------------------------------------------------------- regeneration


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    def produce(out):
        p = _run(
            [
                "scripts/measure/pytorch_compile_stack/_artifacts.py",
                "--device",
                "cpu",
                "--out",
                str(out / "cpu_artifacts.json"),
                "--ir-dir",
                str(out / "ir"),
            ]
        )
        assert p.returncode == 0, f"artifact script failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"

    return shared_once(tmp_path_factory, "pytorch-compile-stack-cpu-artifacts", produce)[0]


def test_cpu_artifacts_match_committed(regenerated):
    committed = sorted(f.name for f in (IR / "cpu").iterdir())
    fresh = sorted(f.name for f in (regenerated / "ir").iterdir())
    assert committed == fresh, f"artifact files differ: committed {committed}, regenerated {fresh}"
    problems = []
    for name in committed:
        a = (IR / "cpu" / name).read_text(encoding="utf-8")
        b = (regenerated / "ir" / name).read_text(encoding="utf-8")
        if a != b:
            diff = "".join(
                difflib.unified_diff(
                    a.splitlines(True), b.splitlines(True), f"committed/{name}", f"regenerated/{name}", n=1
                )
            )
            problems.append(diff[:3000])
    assert not problems, (
        "regenerated CPU artifacts differ from data/pytorch_compile_stack/ir/cpu "
        "(run scripts/measure/pytorch_compile_stack/_artifacts.py --device cpu and review):\n" + "\n".join(problems)
    )


def test_cpu_artifact_manifest_matches(regenerated):
    old = load("pytorch_compile_stack/cpu_artifacts")
    new = json.loads((regenerated / "cpu_artifacts.json").read_text())
    key = lambda r: r["artifact"]  # noqa: E731
    assert sorted(old["rows"], key=key) == sorted(new["rows"], key=key)


# ----------------------------------------------------------------------------- datasets

WORKLOADS = {"pointwise", "mlp", "gpt2_fwd", "conv", "gpt2_train"}


def _timing(ds):
    return [r for r in ds["rows"] if r.get("kind") == "timing"]


def _kernels(ds, workload, mode):
    return [r for r in ds["rows"] if r.get("kind") == "kernel" and (r["workload"], r["mode"]) == (workload, mode)]


@pytest.mark.parametrize(
    "name, modes",
    [
        ("pytorch_compile_stack/gpu_workloads", ("default", "reduce-overhead")),
        ("pytorch_compile_stack/gpu_autotune", ("max-autotune",)),
    ],
)
def test_gpu_dataset_claims(name, modes):
    ds = load(name)
    assert ds["provenance"]["gpu"] == "NVIDIA H200"
    rows = _timing(ds)
    cases = {(r["workload"], r["mode"]) for r in rows}
    assert {m for _, m in cases} == {"eager", *modes}, f"{name} holds other modes than its producer measures"
    for w in WORKLOADS:
        for m in ("eager", *modes):
            assert (w, m) in cases, f"no row for {w}/{m} (the case set is fixed: every case has its row)"
    for r in rows:
        if r["mode"] == "eager":
            continue
        if r.get("ms") is not None:
            assert r["correct"] is True, f"{r['workload']}/{r['mode']} timed although not checked correct"
            assert r["err_compiled"] <= 2 * r["err_eager"] + 2e-3
            eager = r.get("eager_ms") or next(
                e["ms"] for e in rows if e["workload"] == r["workload"] and e["mode"] == "eager"
            )
            assert abs(r["vs_eager"] - eager / r["ms"]) < 1e-3 * r["vs_eager"] + 1e-4
            assert r.get("kernels") is not None, f"{r['workload']}/{r['mode']}: timed, but no kernels recorded"
    # launch counts in the timing rows are the sums of the kernel rows, and no compiled case lists none
    kernels = [r for r in ds["rows"] if r.get("kind") == "kernel"]
    from measure.pytorch_compile_stack import _common as C

    C.require_kernels([r for r in ds["rows"] if r.get("kind") != "timing" or r.get("ms") is not None])
    for r in rows:
        if r.get("kernels") is None:
            continue
        mine = [k for k in kernels if (k["workload"], k["mode"]) == (r["workload"], r["mode"])]
        ext = sum(k["launches"] for k in mine if k["kernel"].startswith(("extern_kernels", "torch.ops", "aten.")))
        assert sum(k["launches"] for k in mine) - ext == r["kernels"]
        assert ext == r["extern_calls"]
    if "default" in modes:  # the profiler and the output code agree on the one-kernel pointwise chain
        pw = next(r for r in rows if (r["workload"], r["mode"]) == ("pointwise", "default"))
        assert pw["kernels"] == pw["gpu_ops"] == 1


def test_cpu_datasets_claims():
    ds = load("pytorch_compile_stack/cpu_workloads")
    rows = _timing(ds)
    assert len({r["workload"] for r in rows}) >= 2, "the page promises at least two CPU workloads"
    for r in rows:
        if r["mode"] != "eager" and r.get("ms") is not None:
            assert r["correct"] is True
    # claims of the CPU section: max-autotune alone changes no kernel; freezing folds the conv block's
    # batch norm into oneDNN convolutions (no generated kernel left) and keeps MKL for the MLP's GEMMs
    kern = [r for r in ds["rows"] if r.get("kind") == "kernel"]
    names = lambda w, m: sorted(r["kernel"] for r in kern if (r["workload"], r["mode"]) == (w, m))  # noqa: E731
    for w in {r["workload"] for r in rows}:
        assert names(w, "default") == names(w, "max-autotune"), w
    assert not [n for n in names("conv", "max-autotune+freezing") if n.startswith("cpp_")]
    assert "torch.ops.mkl._mkl_linear" in names("mlp", "max-autotune+freezing")
    prod = load("pytorch_compile_stack/cpu_production")
    studies = {r["study"] for r in prod["rows"]}
    assert {"dynamic", "regional", "caches", "aoti"} <= studies
    dyn = {r["variant"]: r for r in prod["rows"] if r["study"] == "dynamic"}
    # the page explains these counts: one graph per batch size, then automatic dynamic, then none
    assert dyn["dynamic=False"]["graphs"] == dyn["dynamic=False"]["batches"]
    assert dyn["default"]["graphs"] == 2
    assert dyn["mark_dynamic"]["graphs"] == dyn["dynamic=True"]["graphs"] == 1


# ----------------------------------------------------------------------------- parser and scripts


def test_kernel_parser_counts_calls_not_definitions():
    from measure.pytorch_compile_stack import _common as C

    for device in ("cpu", "cuda"):
        graph, ks = C.kernels_in((IR / device / "output_code.txt").read_text())
        assert graph == "0_inference"
        generated = [(n, c) for n, c in ks if not n.startswith("extern_kernels")]
        assert len(generated) == 3 and all(c == 1 for _, c in generated), (device, ks)
        assert dict(ks).get("extern_kernels.mm", 0) + dict(ks).get("extern_kernels.addmm", 0) == 2


def test_kernel_parser_reads_graph_partitions():
    """With CUDA graphs (reduce-overhead, max-autotune) Inductor's graph partitioning moves the launches
    into partition_N() functions that call() reaches through self.partitions: on the H200 the parser
    that read call() alone found no kernel for those modes (issue 16)."""
    from measure.pytorch_compile_stack import _common as C

    code = (
        "# AOT ID: ['0_inference']\n"
        "triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n"
        "def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK):\n    pass\n''', device_str='cuda')\n"
        "async_compile.wait(globals())\n"
        "def partition_0(args):\n"
        "    arg0_1, = args\n"
        "    buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)\n"
        "    triton_poi_fused_add_0.run(arg0_1, buf0, 4, stream=stream0)\n"
        "    extern_kernels.mm(buf0, buf0, out=buf1)\n"
        "    return (buf1, )\n"
        "class Runner:\n"
        "    def __init__(self, partitions):\n        self.partitions = partitions\n"
        "    def call(self, args):\n"
        "        (buf1,) = self.partitions[0](partition0_args)\n        return (buf1, )\n"
        "runner = Runner(partitions=[partition_0,])\ncall = runner.call\n"
    )
    graph, ks = C.kernels_in(code)
    assert graph == "0_inference" and ks == [("triton_poi_fused_add_0", 1), ("extern_kernels.mm", 1)], ks


def test_normalize_removes_run_specific_text():
    from measure.pytorch_compile_stack._artifacts import normalize

    raw = (
        f"V1130 02:47:46.328000 2684 torch/_dynamo/guards.py:4483] [0/0] [__guards] "
        f"ID_MATCH: ___check_obj_id(G['F'], 139715244615904) at {ROOT}/snippets/x.py and /tmp/abc/def.py\n"
    )
    out = normalize(raw)
    assert "139715244615904" not in out and str(ROOT) not in out and "02:47:46" not in out
    assert "/tmp/abc" not in out and "snippets/x.py" in out


@pytest.mark.parametrize(
    "script, args, message",
    [
        ("gpu_workloads", ["--rounds", "1"], "--rounds must be at least 2"),
        ("gpu_workloads", ["--only", "mlp"], "only with --quick"),
        ("gpu_workloads", ["--device", "cpu"], "add --quick"),
        ("_artifacts", ["--device", "tpu"], "invalid choice"),
        ("cpu_workloads", ["--only", "resnet"], "unknown workload"),
    ],
)
def test_scripts_reject_bad_arguments(script, args, message, capsys):
    """Each producer's main(argv), in this process (its `python <script> ...` is the same call after one
    import of torch, which this process has made already): argparse's exit with the message on stderr."""
    import importlib

    mod = importlib.import_module(f"measure.pytorch_compile_stack.{script}")
    with pytest.raises(SystemExit) as e:
        mod.main(args)
    err = capsys.readouterr().err
    assert e.value.code not in (0, None) and message in err, err[-2000:]


# ----------------------------------------------------------------------------- kernel capture, cold and warm


def test_case_worker_refuses_an_unknown_mode(tmp_path):
    """--mode bogus ended in a RuntimeError traceback from inside torch._inductor (bad-input audit)."""
    import os

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "scripts"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "i"),
        "TRITON_CACHE_DIR": str(tmp_path / "t"),
    }
    p = subprocess.run(
        [
            sys.executable,
            "scripts/measure/pytorch_compile_stack/_case.py",
            "--workload",
            "pointwise",
            "--mode",
            "bogus",
            "--size",
            "tiny",
            "--device",
            "cpu",
            "--phase",
            "cold",
            "--out",
            str(tmp_path / "o.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "unknown --mode 'bogus'; known: default" in p.stderr and "max-autotune+freezing" in p.stderr


def test_kernel_capture_cold_and_warm_on_cpu():
    """Issue 16: a compiled case must list its kernels whatever the cache state. The producers'
    worker (_case.py) runs here as it does on the H200, on the CPU workloads at tiny size: a fresh
    process compiles into an empty cache dir (cold), a second fresh process compiles from that
    dir (warm, FX graph cache hit); both must list the same kernels. About a minute on 2 cores."""
    code = (
        "import json\n"
        "from measure.pytorch_compile_stack import _common as C\n"
        "res = C.run_case('pointwise', 'default', size='tiny', device='cpu', rounds=2)\n"
        "row, k = C.case_rows(res, 'tiny')\n"
        "print(json.dumps({'row': row, 'k': k, 'cold': res['cold']['kernel_rows'], 'warm': res['warm']['kernel_rows']}))\n"
    )
    import os

    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
    )
    assert p.returncode == 0, p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    row = out["row"]
    assert out["cold"] and out["warm"], "a phase captured no kernels"
    assert row["cold_fxgraph_misses"] >= 1 and row["warm_fxgraph_hits"] >= 1, row  # cold was cold, warm hit the cache
    assert row["warm_kernels_match"] is True and row["kernels"] == 1, row
    assert [k["kernel"] for k in out["k"]][0].startswith("cpp_fused_"), out["k"]
    assert row["correct"] is True and row["vs_eager_spread"] >= 0


def test_producer_refuses_a_case_without_kernels():
    from measure.pytorch_compile_stack import _common as C

    rows = [
        {"kind": "timing", "workload": "mlp", "mode": "eager", "ms": 1.0},
        {"kind": "timing", "workload": "mlp", "mode": "default", "ms": 1.0},
        {"kind": "timing", "workload": "mlp", "mode": "reduce-overhead", "ms": 1.0},
        {"kind": "kernel", "workload": "mlp", "mode": "default", "graph": "inference", "kernel": "k0", "launches": 1},
    ]
    with pytest.raises(C.NoKernels, match="reduce-overhead"):
        C.require_kernels(rows)
    C.require_kernels(rows[:2] + rows[3:])  # every compiled case lists something: accepted
    empty = {"workload": "mlp", "mode": "default", "kernel_rows": []}
    with pytest.raises(C.NoKernels):
        C.case_rows({"cold": {**empty, "kernel_rows": [rows[3]]}, "warm": empty}, "x")


def test_page_sentences_match_the_data():
    """Sentences of the page that state facts about single rows, which check() markers cannot
    express (a missing figure, a zero, a cache miss): each is asserted against the data here, and
    the test fails when the page loses the sentence, so the two are edited together."""
    page = " ".join((ROOT / "docs" / "en" / "pytorch-compile-stack.md").read_text(encoding="utf-8").split())
    gw, ga = load("pytorch_compile_stack/gpu_workloads"), load("pytorch_compile_stack/gpu_autotune")
    cw = load("pytorch_compile_stack/cpu_workloads")
    row = lambda ds, w, m: next(r for r in _timing(ds) if (r["workload"], r["mode"]) == (w, m))  # noqa: E731
    og = load("pytorch_compile_stack/call_overhead_gpu")
    prev = [previous_row(og, r) for r in og["rows"]]
    assert all(prev), "call_overhead_gpu.json holds one run of this code: its sentence needs two"
    us = [{r["variant"]: r["us"] for r in rows} for rows in (og["rows"], prev)]  # host µs per call: last, previous
    claims = {
        "The training step has the slowest cold compile of the five": lambda: (
            max((r for r in _timing(ga) if r["mode"] == "max-autotune"), key=lambda r: r["compile_cold_s"])["workload"]
            == "gpt2_train"
        ),
        "all five cases were measured in one run of it": lambda: (
            (ga.get("runs") or 1) == 1
            and all(
                row(ga, w, "max-autotune").get("ms") is not None
                for w in ("pointwise", "mlp", "gpt2_fwd", "conv", "gpt2_train")
            )
            and "--budget-s" not in ga["provenance"]["command"]
        ),
        "most of it compiling and benchmarking candidate GEMM kernels": lambda: all(
            row(ga, w, "max-autotune")["compile_cold_s"] > 2 * row(gw, w, "default")["compile_cold_s"]
            for w in ("mlp", "gpt2_fwd")
        ),
        "where one of the four GEMMs became a Triton template (`triton_tem_*`) and the other three stayed with "
        "cuBLAS as `bias_addmm`": lambda: (
            sum(r["kernel"].startswith("triton_tem_") for r in _kernels(ga, "gpt2_fwd", "max-autotune")) == 1
            and sum(
                r["launches"]
                for r in _kernels(ga, "gpt2_fwd", "max-autotune")
                if r["kernel"] == "extern_kernels.bias_addmm"
            )
            == 3
        ),
        "Every warm compile found its graphs in the FX graph cache (the hits column, one graph per forward "
        "case, two for training: forward and backward)": lambda: all(
            r["warm_fxgraph_hits"] == (2 if r["workload"] == "gpt2_train" else 1) and r["warm_fxgraph_misses"] == 0
            for r in _timing(gw)
            if r["mode"] != "eager"
        ),
        "The training step has the slowest cold compile": lambda: (
            max((r for r in _timing(gw) if r["mode"] == "default"), key=lambda r: r["compile_cold_s"])["workload"]
            == "gpt2_train"
        ),
        "the training step had the most launches": lambda: (
            max((r for r in _timing(gw) if r["mode"] == "default"), key=lambda r: r["gpu_ops"])["workload"]
            == "gpt2_train"
        ),
        "the `max-autotune+freezing` rows of the three modules (the pointwise chain has no weights to freeze) "
        "found no FX graph cache entry": lambda: all(
            r["warm_fxgraph_hits"] == 0
            for r in _timing(cw)
            if r["mode"] == "max-autotune+freezing" and r["workload"] != "pointwise"
        ),
        "the peak during a replay of the inference rows is zero": lambda: (
            all(row(gw, w, "reduce-overhead")["peak_mib"] == 0 for w in ("pointwise", "mlp", "gpt2_fwd", "conv"))
            and row(gw, "gpt2_train", "reduce-overhead")["peak_mib"] > 0
        ),
        # Dynamo's own cost is a part of the compiled call's extra host time, in the last run and the one before
        "of the difference, Dynamo alone": lambda: all(
            0 < run["dynamo_guards"] - run["eager"] < run["inductor"] - run["eager"] for run in us
        ),
    }
    for sentence, holds in claims.items():
        assert sentence in page, f"the page no longer says {sentence!r}: update this test with it"
        assert holds(), f"the data no longer support {sentence!r}: rewrite the sentence"


def test_guard_logs_record_the_thread_count_the_page_names():
    """#guards: the GLOBAL_STATE guard records the thread count; the page says both logs hold 2 because the
    capture script sets OMP_NUM_THREADS=2 (the H200 machine has 16 cores, CI 2)."""
    import re

    for sub in ("cpu", "cpu_torch211"):
        log = (IR / sub / "guards.log").read_text(encoding="utf-8")
        assert re.findall(r'"num_threads":(\d+)', log) == ["2"], f"{sub}/guards.log"
    script = (ROOT / "scripts" / "measure" / "pytorch_compile_stack" / "_artifacts.py").read_text(encoding="utf-8")
    assert '"OMP_NUM_THREADS": "2"' in script
    for lang, words in (("en", "2 in both logs below"), ("zh", "下面两份日志里都是 2")):
        page = " ".join((ROOT / "docs" / lang / "pytorch-compile-stack.md").read_text(encoding="utf-8").split())
        assert words in page and "OMP_NUM_THREADS=2" in page, lang


# ----------------------------------------------------------------------------- nested compile regions

NESTED = ROOT / "snippets" / "pytorch_compile_stack" / "nested_region.py"
NESTED_LOOP = "\nfor name, block in ("  # the snippet's printing loop; everything above it defines


def _nested_run(body: str) -> dict:
    """Run `body` in a fresh process after the snippet's definitions (its loop left out); `body`
    prints one JSON line."""
    src = NESTED.read_text(encoding="utf-8")
    assert NESTED_LOOP in src, "nested_region.py no longer ends with its printing loop: update this test"
    code = src[: src.index(NESTED_LOOP)] + "\nimport json\n" + body
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_nested_compile_region_is_traced_once_and_reused():
    """#nested-compile-region: the marked block's body is traced once by Dynamo and once by AOTAutograd,
    lowered once by Inductor and generated as one function called per block, whatever the depth (ten
    blocks here, six on the page: max_reuse_entries=8 caps distinct traces, not reuses). The page's own
    run at six blocks, whole model and region, is compared with its printed output by tests/test_reader.py
    (the whole-model compile fusing a block's residual add with the next block's LayerNorm, which the
    region cannot), so this test compiles only the deeper marked stack."""
    c = _nested_run("print(json.dumps(compile_and_count(MarkedBlock, depth=10)))\n")
    assert c["backend_calls"] == 1 and c["region_calls"] == 10 and c["bodies"] == 1, c
    assert (c["traced"], c["stamped"], c["aot_traced"]) == (1, 9, 1), c
    assert c["lowered"] == 2 and c["fn_calls"] == {"repeated_subgraph0": 10}, c
    assert c["kernels"] == ["native_layer_norm", "gelu_view", "add_view"], c["kernels"]
    _page_says({"en": "ten marked blocks trace once", "zh": "十个加了标记的块只追踪一次"})


def test_nested_compile_region_retraces_a_new_input_layout():
    """#nested-compile-region: reuse is guarded. Four calls on three input layouts (a tensor, a slice
    with the parent's strides, a contiguous copy of the slice, the tensor again) give three traces and
    one reuse. Dynamo alone decides this: the eager backend keeps the test short."""
    out = _nested_run(
        "blocks = nn.ModuleList(MarkedBlock(64) for _ in range(4))\n"
        "def f(x):\n"
        "    s = x[:, :16]\n"
        "    return blocks[0](x), blocks[1](s), blocks[2](s.contiguous()), blocks[3](x)\n"
        "torch._dynamo.reset(); compilation_time_metrics.clear()\n"
        "backend = CompileCounterWithBackend('eager')\n"
        "with torch.no_grad():\n"
        "    torch.compile(f, backend=backend)(torch.randn(4, 32, 64))\n"
        "(gm,) = backend.graphs\n"
        "print(json.dumps({'traced': len(compilation_time_metrics.get('invoke_subgraph_trace', [])),\n"
        "                  'stamped': len(compilation_time_metrics.get('invoke_subgraph_reuse_stamp_out', [])),\n"
        "                  'subgraphs': sorted(n for n, m in gm.named_children() if isinstance(m, torch.fx.GraphModule))}))\n"
    )
    assert out == {"traced": 3, "stamped": 1, "subgraphs": ["subgraph_0", "subgraph_1", "subgraph_2"]}, out
    _page_says({"en": "calls on three input layouts", "zh": "四次调用追踪出三张子图"})


def _page_says(words: dict) -> None:
    for lang, w in words.items():
        page = " ".join((ROOT / "docs" / lang / "pytorch-compile-stack.md").read_text(encoding="utf-8").split())
        assert w in page, f"{lang}: the page no longer says {w!r}: update this test with it"
