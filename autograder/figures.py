"""Notebook side: the self-check's figures (autograder/selfcheck/plotting.py draws them; nothing here grades)."""

def reuse_figure(plt, stage, tile, inst):
    """Global loads per output (and, for stage 4, the bank-conflict degree of each shared load line)."""
    g = (inst or {}).get("global_loads")
    if not g or not g.get("loads_per_output"):
        return None
    banks = [r for r in inst.get("bank_conflicts") or [] if r["access"] == "load"]
    panels = 2 if stage.padded_b and banks else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 3.4), squeeze=False)
    ax = axes[0][0]
    naive, yours = g["naive_loads_per_output"], g["loads_per_output"]
    names, values, colors = ["naive (2K)", "your kernel"], [naive, yours], ["#bbbbbb", "#1f77b4"]
    if tile:  # what a kernel tiled by TILE loads at this shape (2K / TILE on multiples of the tile)
        from .checks.data_reuse import tiled_reuse
        M, _, N = inst["shape"]
        names.append(f"tiled by {tile}")
        values.append(round(naive / tiled_reuse(M, N, tile)[0], 2))
        colors.append("#2ca02c")
    ax.bar(names, values, color=colors)
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:g}", ha="center", va="bottom")
    ax.set_ylim(0, max(values) * 1.15)
    ax.set_ylabel("global loads per output element")
    M, K, N = inst["shape"]
    ax.set_title(f"Global traffic at M x K x N = {M}x{K}x{N} (simulator count)")
    if panels == 2:
        ax = axes[0][1]
        labels = [f"{r['array'].split(' (')[0]} load, line {r['line']}" for r in banks] + ["unpadded sBT, for comparison"]
        degrees = [r["mean_degree"] for r in banks] + [32]
        colors = ["#2ca02c" if d < 2 else "#d62728" for d in degrees[:-1]] + ["#bbbbbb"]
        ax.barh(labels, degrees, color=colors)
        for i, d in enumerate(degrees):
            ax.text(d, i, f" {d:g}-way", va="center")
        ax.set_xlim(0, 40)
        ax.set_xlabel("mean bank-conflict degree of a warp's load (1 = none)")
        ax.set_title("Shared-memory loads (simulator bank counter)")
    fig.tight_layout()
    return fig

def timing_figure(plt, stage, timings):
    """TFLOP/s of the student's kernel and the references over N."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, ms in timings["ms"].items():
        tflops = [2 * n ** 3 / (t * 1e-3) / 1e12 for n, t in zip(timings["sizes"], ms)]
        ax.plot(timings["sizes"], tflops, marker="o", label=name, lw=2.5 if name == "yours" else 1.2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (square matrices)")
    ax.set_ylabel("TFLOP/s (median of %d runs)" % timings["repeats"])
    ax.set_title(f"Stage {stage.number}: your kernel against the references")
    ax.legend()
    fig.tight_layout()
    return fig
