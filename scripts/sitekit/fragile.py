"""Checks close to flipping: the `{{ check(...) }}` markers whose sentence the next measurement could
make false although nothing changed but noise.

A check passes or fails the build on the data as committed. When its figure sits close to the check's
threshold, a re-run that moves the figure by less than its own noise can fail the build and send a data
pull request back to a human. This module measures how far each check is from failing, as a fraction of
its reference, and lists those closer than half the figure's noise (a `~` check is listed once its
figure is more than half the noise away from the reference): the
sentences to rewrite with `{{ verdict(...) }}` (which renders whatever the data says) or with a weaker,
still checked claim (`<~`, `>~`). `scripts/gpu_ci.py` appends the list to its drift report after
writing new data; on its own:

    python -m sitekit.fragile [--page docs/en/some-page.md ...]

The English pages suffice: the parity test keeps the Chinese pages' markers identical.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from . import DOCS
from .data import DataError
from .render import MARKER, _judge, _literal


@dataclass(frozen=True)
class Fragile:
    page: str
    line: int
    op: str
    value: float
    ref: float
    noise: float
    margin: float
    dataset: str
    where: dict

    def __str__(self) -> str:
        return (
            f"{self.page}:{self.line}: {self.dataset} {self.where} = {self.value:.4g}, check '{self.op} "
            f"{self.ref:.4g}' passes by {self.margin:.1%} of the reference, less than half the "
            f"figure's noise ({self.noise:.1%})"
        )


def margin(op: str, v: float, r: float, noise: float) -> float:
    """How far the check `v op r` is from failing, as a fraction of |r| (negative: it fails now)."""
    scale = abs(r) or 1.0
    if op == ">":
        return (v - r * (1 + noise)) / scale
    if op == "<":
        return (r * (1 - noise) - v) / scale
    if op == "~":
        return (noise * abs(r) - abs(v - r)) / scale
    if op == "<~":
        return (r * (1 + noise) - v) / scale
    if op == ">~":
        return (v - r * (1 - noise)) / scale
    if op == ">=":
        return (v - r) / scale
    if op == "<=":
        return (r - v) / scale
    raise DataError(f"check(): op must be one of > < ~ <~ >~ >= <=, found {op!r}")


def scan_text(markdown: str, page: str = "<text>") -> list[Fragile]:
    """Every check marker of one page whose margin is smaller than half its figure's noise."""
    out = []
    for m in MARKER.finditer(markdown):
        tree = ast.parse(m.group("call"), mode="eval").body
        if tree.func.id != "check":
            continue
        args = [_literal(a) for a in tree.args]
        kw = {k.arg: _literal(k.value) for k in tree.keywords if k.arg}
        name, metric = args[0], args[1]
        where, op, ref = kw.get("where"), kw.get("op", ">"), kw.get("ref", 1.0)
        v, r, noise = _judge(name, metric, where, ref, kw.get("factor", 1.0))
        if noise <= 0:  # exact figures (counts, bytes from a compiler): a flip is a real change
            continue
        mg = margin(op, v, r, noise)
        if mg < noise / 2:
            line = markdown.count("\n", 0, m.start()) + 1
            out.append(Fragile(page, line, op, v, r, noise, mg, name, where or {}))
    return out


def scan(pages: list[Path] | None = None) -> list[Fragile]:
    pages = pages or sorted((DOCS / "en").glob("*.md"))
    found = []
    for p in pages:
        found += scan_text(p.read_text(encoding="utf-8"), p.name)
    return sorted(found, key=lambda f: f.margin)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", action="append", type=Path, default=[], help="a page to scan (default: docs/en/*.md)")
    args = ap.parse_args(argv)
    for p in args.page:
        if not p.is_file():
            ap.error(f"no such page: {p}")
    found = scan(args.page or None)
    for f in found:
        print(f)
    print(f"{len(found)} check(s) closer to failing than half their figure's noise", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
