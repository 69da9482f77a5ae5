"""Datasets older than their code, and data/stale.yml, the list the pages show.

A dataset records the content hash of every module it was produced with (`sources`: the producer, its
helpers, the page's snippets it imported; comments and empty lines left out, sitekit.measure.code_text).
When the code of one of those files changes, the figures on the page
come from older code: re-measure (scripts/gpu_ci.py or the producer), or list the dataset in
data/stale.yml with the reason, which the page prints beside the provenance line.

    python -m sitekit.stale            # which datasets are older than their code, and why
    python -m sitekit.stale --write    # make data/stale.yml list exactly those (keeps written reasons)
"""

from __future__ import annotations

import argparse
import json

import yaml

from . import DATA, ROOT
from .measure import source_hash

STALE = DATA / "stale.yml"
HEADER = """\
# Datasets whose code changed after they were measured (tests/test_data.py keeps this list exact:
# a dataset whose recorded source hashes no longer match must be listed, and only those).
# The page shows the reason beside the dataset's provenance line. Re-measure to remove an entry;
# `python -m sitekit.stale --write` rewrites the list from the hashes, keeping the reasons written here.
"""


def moved_sources(obj: dict) -> list[str]:
    """Recorded sources whose files changed or vanished since the dataset was measured."""
    if "sources" not in obj:
        return ["(no source hashes recorded)"]
    moved = []
    for rel, sha in obj["sources"].items():
        f = ROOT / rel
        if not f.is_file() or source_hash(f.read_bytes(), f) != sha:
            moved.append(rel)
    return moved


def listed() -> dict:
    return (yaml.safe_load(STALE.read_text(encoding="utf-8")) or {}) if STALE.exists() else {}


def current() -> dict[str, list[str]]:
    from .registry import DATASETS

    out = {}
    for d in DATASETS:
        p = DATA / f"{d.name}.json"
        if p.exists():
            moved = moved_sources(json.loads(p.read_text(encoding="utf-8")))
            if moved:
                out[d.name] = moved
    return out


def write() -> dict:
    old, now = listed(), current()
    entries = {}
    for name, moved in sorted(now.items()):
        if name in old:
            entries[name] = old[name]
        elif moved == ["(no source hashes recorded)"]:
            entries[name] = {
                "en": "measured before datasets recorded the hashes of their code",
                "zh": "测量时数据集尚未记录代码哈希",
            }
        else:
            files = ", ".join(moved)
            entries[name] = {"en": f"changed since: {files}", "zh": f"此后有改动：{files}"}
    body = yaml.safe_dump(entries, allow_unicode=True, sort_keys=True, width=200) if entries else ""
    STALE.write_text(HEADER + "\n" + body, encoding="utf-8")
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite data/stale.yml to list exactly the stale datasets")
    args = ap.parse_args(argv)
    if args.write:
        entries = write()
        print(f"data/stale.yml: {len(entries)} stale datasets")
        return 0
    for name, moved in sorted(current().items()):
        print(f"{name}: {', '.join(moved)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
