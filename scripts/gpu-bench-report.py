#!/usr/bin/env python3
"""Turn the GPU benchmark suite's CSV (scripts/gpu-bench.sh) into docs/gpu-bench.md (a table of
kernel times and ratios to the hand-written CUDA), docs/gpu-bench.csv and docs/gpu-bench.png (a
bar chart of the ratios). Needs matplotlib (pip install matplotlib).

    python3 scripts/gpu-bench-report.py path/to/gpu-bench.csv [--date YYYY-MM-DD]
"""
import csv
import shutil
import sys
from collections import defaultdict
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = Path(sys.argv[1])
date = sys.argv[sys.argv.index("--date") + 1] if "--date" in sys.argv else ""

suite = {}
for line in (root / "benches/gpu/suite.tsv").read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    f = line.split("\t")
    suite[f[0]] = {"bytes": int(f[7]), "flops": int(f[8])}

times = defaultdict(dict)
for row in csv.DictReader(src.open()):
    times[row["name"]][row["impl"]] = float(row["median_ms"])

impls = [i for i in ("cuda", "ptx", "cuda_checked", "ptx_checked") if any(i in t for t in times.values())]
lines = [
    "# GPU benchmark suite",
    "",
    f"NVIDIA H200{', ' + date if date else ''}: `scripts/gpu.sh bench` (median of 20 launches after 3",
    "warm-up, CUDA events; hand CUDA by nvcc -O3 --fmad=false, `hand_fma` with FMA contraction).",
    "Ratio = hand time / Sarek time (1.00 = as fast as hand-written, higher is faster).",
    "Kernels and launch shapes: `benches/gpu/suite.tsv`; hand versions: `benches/gpu/hand.cu`.",
    "",
    "| kernel | hand (ms) | hand FMA (ms) | "
    + " | ".join(f"`{i}` (ms)" for i in impls)
    + " | "
    + " | ".join(f"ratio `{i}`" for i in impls)
    + " | best Sarek throughput |",
    "| --- | --- | --- | " + " | ".join("---" for _ in impls * 2) + " | --- |",
]
for name, t in times.items():
    hand = t.get("hand")
    cells = [name, f"{hand:.4f}" if hand else "-", f"{t['hand_fma']:.4f}" if "hand_fma" in t else "-"]
    cells += [f"{t[i]:.4f}" if i in t else "-" for i in impls]
    cells += [f"{hand / t[i]:.2f}" if hand and i in t else "-" for i in impls]
    best = min((t[i] for i in impls if i in t), default=None)
    info = suite.get(name, {})
    thr = "-"
    if best:
        if info.get("flops") and name.startswith("matmul") or name.startswith("nbody"):
            thr = f"{info['flops'] / best / 1e9:.1f} TFLOP/s"
        elif info.get("bytes"):
            thr = f"{info['bytes'] / best / 1e9:.2f} TB/s"
    cells.append(thr)
    lines.append("| " + " | ".join(cells) + " |")
(root / "docs/gpu-bench.md").write_text("\n".join(lines) + "\n")
shutil.copy(src, root / "docs/gpu-bench.csv")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib missing: no chart", file=sys.stderr)
    sys.exit(0)
names = [n for n in times if "hand" in times[n]]
fig, ax = plt.subplots(figsize=(11, 4.5))
w = 0.8 / max(len(impls), 1)
for k, i in enumerate(impls):
    vals = [times[n]["hand"] / times[n][i] if i in times[n] else 0 for n in names]
    ax.bar([x + k * w for x in range(len(names))], vals, w, label=i)
ax.axhline(1.0, color="black", linewidth=0.8)
ax.set_xticks([x + w * (len(impls) - 1) / 2 for x in range(len(names))])
ax.set_xticklabels(names, rotation=30, ha="right")
ax.set_ylabel("hand CUDA time / Sarek time")
ax.set_title("Sarek vs hand-written CUDA on the H200 (higher is faster)")
ax.legend()
fig.tight_layout()
fig.savefig(root / "docs/gpu-bench.png", dpi=110)
print("wrote docs/gpu-bench.md, docs/gpu-bench.csv, docs/gpu-bench.png")
