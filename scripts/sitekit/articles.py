"""The chapter's pages in reading order: nav order and the landing page's cards come from here.

A card links to its article once docs/<lang>/<slug>.md exists; until then it says
the article is not written yet (and links nowhere), so the landing page never
points at a page that does not exist.
"""

from __future__ import annotations

import html

from . import DOCS

ARTICLES = [
    (
        "how-ai-compilers-work",
        {
            "en": "How AI Compilers Work: Fusion, Kernels, Autotuning",
            "zh": "AI 编译器如何工作：算子融合、内核生成与自动调优",
        },
        {
            "en": "The three layers of an AI compiler, the kinds of fusion and what each saves, three routes to autotuning, and the torch.compile stack in one picture.",
            "zh": "AI 编译器的三层结构、各类算子融合及其收益、自动调优的三条路线，以及一张图看懂 torch.compile 技术栈。",
        },
    ),
    (
        "triton-getting-started",
        {"en": "Practical Guide: Getting Started with OpenAI Triton", "zh": "实践指南：OpenAI Triton 入门"},
        {
            "en": "From an empty machine to a first high-performance vector-add kernel, measured against the copy bandwidth.",
            "zh": "从一台空机器开始，写出第一个高性能向量加法内核，并用拷贝带宽衡量它。",
        },
    ),
    (
        "mlir-architecture",
        {
            "en": "MLIR Architecture: The Unified Intermediate Representation of AI Compilers",
            "zh": "MLIR 架构：AI 编译器的统一中间表示",
        },
        {
            "en": "Dialect layering, operations and SSA, the lowering pipeline, and how Triton and XLA use MLIR, with reproducible compile commands and IR samples.",
            "zh": "方言分层、操作与 SSA、逐级下降流水线，以及 Triton 和 XLA 如何使用 MLIR，附可复现的编译命令与 IR 样例。",
        },
    ),
    (
        "pytorch-compile-stack",
        {
            "en": "PyTorch Compile Stack: Operator Fusion from TorchDynamo to TorchInductor",
            "zh": "PyTorch 编译栈：从 TorchDynamo 到 TorchInductor 的算子融合",
        },
        {
            "en": "TorchScript, TorchDynamo and TorchInductor; where torch.compile speeds a workload up and where it does not, measured; fusion mechanics, IR tracing and choosing a mode for production.",
            "zh": "TorchScript、TorchDynamo 与 TorchInductor；实测 torch.compile 在哪些负载上提速、在哪些负载上没有提速；融合机制、IR 追踪，以及生产环境的模式选择。",
        },
    ),
    (
        "cuda-compilation-pipeline",
        {
            "en": "CUDA Compilation Pipeline Deep Dive: nvcc → PTX → SASS",
            "zh": "深入 CUDA 编译流水线：nvcc → PTX → SASS",
        },
        {
            "en": "Two-stage compilation, gencode combinations and what ends up in the binary, JIT and compatibility, and reading the artifacts.",
            "zh": "两阶段编译、gencode 组合与二进制中的实际内容、JIT 与兼容性，以及如何阅读编译产物。",
        },
    ),
    (
        "triton-kernel-practice",
        {
            "en": "Triton Kernel Practice: From Vector Addition to the FlashAttention Core",
            "zh": "Triton 内核实战：从向量加法到 FlashAttention 核心",
        },
        {
            "en": "Vector add, tiled GEMM, softmax and the FlashAttention core, each built up in measured steps against cuBLAS, torch and SDPA.",
            "zh": "向量加法、分块 GEMM、softmax 与 FlashAttention 核心，每一步都与 cuBLAS、torch 和 SDPA 实测对比。",
        },
    ),
    (
        "triton-deep-dive",
        {
            "en": "Deep Dive into OpenAI Triton: Building FlashAttention & High-Performance CFD from Scratch",
            "zh": "深入 OpenAI Triton：从零构建 FlashAttention 与高性能 CFD 求解器",
        },
        {
            "en": "A trainable FlashAttention in Triton and Gluon (backward pass, grouped-query attention, packed variable-length batches, paged-KV decoding), and a validated lattice Boltzmann CFD solver measured against the copy bandwidth.",
            "zh": "用 Triton 与 Gluon 实现可训练的 FlashAttention（含反向、分组查询注意力、变长打包批次与分页 KV 解码），以及经过验证、以拷贝带宽衡量速度的格子玻尔兹曼 CFD 求解器。",
        },
    ),
    (
        "oneapi-installation",
        {"en": "Intel oneAPI Installation Guide", "zh": "Intel oneAPI 安装指南"},
        {
            "en": "Base and HPC Toolkits, environment variables, MPI tests, and oneMKL and SYCL on a CPU.",
            "zh": "Base 与 HPC 工具包、环境变量、MPI 测试，以及在 CPU 上运行 oneMKL 与 SYCL。",
        },
    ),
]

# index first, then the articles, then the glossary
ORDER = ["index"] + [slug for slug, _, _ in ARTICLES] + ["glossary"]

_TEXT = {
    "read": {"en": "Read the article", "zh": "阅读文章"},
    "soon": {
        "en": "Not written yet: this card will link to the article once it exists.",
        "zh": "尚未完成：文章发布后，这张卡片会链接到它。",
    },
}


def exists(slug: str, lang: str) -> bool:
    return (DOCS / lang / f"{slug}.md").is_file()


def cards(lang: str) -> str:
    """Material grid cards, one per article, in reading order."""
    items = []
    for n, (slug, title, summary) in enumerate(ARTICLES, 1):
        t, s = html.escape(title[lang]), html.escape(summary[lang])
        if exists(slug, lang):
            link = f"[:octicons-arrow-right-24: {_TEXT['read'][lang]}]({slug}.md)"
            head = f"**{n}. [{t}]({slug}.md)**"
        else:
            link = f"*{_TEXT['soon'][lang]}*"
            head = f"**{n}. {t}**"
        items.append(f"-   {head}\n\n    ---\n\n    {s}\n\n    {link}")
    return '<div class="grid cards" markdown>\n\n' + "\n\n".join(items) + "\n\n</div>"
