#!/usr/bin/env python3
"""Tables (markdown) of bench/kredis.sh's results: OUT/{tag}-{pct}-{config}.json as
written by `augur replay --json FILE`, OUT/{tag}-ws.json the working sets.

Usage: bench/kredis_summary.py OUT
"""
import glob
import json
import os
import re
import sys

CONFIGS = ["redis", "off", "static", "kredis", "kredis-ml", "kredis-k5"]


def load(out):
    runs = {}
    for path in glob.glob(os.path.join(out, "*-*-*.json")):
        m = re.match(r"(t\d+)-(\d+)-([\w-]+)\.json$", os.path.basename(path))
        if m:
            with open(path) as f:
                runs[(m.group(1), int(m.group(2)), m.group(3))] = json.load(f)
    return runs


def mb(b):
    return float(b) / 2**20


def num(fields, key):
    try:
        return float(fields.get(key, ""))
    except ValueError:
        return None


def tuner_series(run, every_s=10.0):
    """Per tenant: [(t, target, K, used)] sampled about every `every_s` seconds."""
    polls = (run.get("tenant_polls") or {}).get("samples", [])
    series = {}
    for s in polls:
        series.setdefault(s["group"], []).append(
            (s["t_s"], num(s["fields"], "target"), num(s["fields"], "k"),
             num(s["fields"], "used_memory"))
        )
    out = {}
    for g, pts in series.items():
        picked, next_t = [], 0.0
        for p in pts:
            if p[0] >= next_t:
                picked.append(p)
                next_t = p[0] + every_s
        if pts and picked[-1] is not pts[-1]:
            picked.append(pts[-1])
        out[g] = picked
    return out


def main(out):
    runs = load(out)
    tags = sorted({k[0] for k in runs}, key=lambda t: int(t[1:]))
    verdicts = []
    for tag in tags:
        ws_path = os.path.join(out, f"{tag}-ws.json")
        if os.path.exists(ws_path):
            ws = json.load(open(ws_path))
            print(f"\n## {tag[1:]} tenants: working set {mb(ws['redis_ws']):.1f} MiB in "
                  f"redis-server, {mb(ws['augur_ws']):.1f} MiB in augur (used_memory after "
                  f"one pass of every prefix)")
        for pct in sorted({k[1] for k in runs if k[0] == tag}):
            have = [c for c in CONFIGS if (tag, pct, c) in runs]
            print(f"\n### {tag[1:]} tenants, maxmemory {pct} % of the working set\n")
            print("| config | hit ratio | mean of tenants' mean latency (us) | "
                  "mean latency, all requests (us) | p99 (us) | hits/s | requests | "
                  "vs redis (mean of means) |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            base = runs[(tag, pct, "redis")]["overall"] if "redis" in have else None
            for c in have:
                o = runs[(tag, pct, c)]["overall"]
                rel = (f"{(o['mean_of_group_means_us'] / base['mean_of_group_means_us'] - 1) * 100:+.1f} %"
                       if base else "")
                print(f"| {c} | {o['hit_ratio']:.4f} | {o['mean_of_group_means_us']:.1f} | "
                      f"{o['latency_us']['mean']:.1f} | {o['latency_us']['p99']:.0f} | "
                      f"{o['hits_per_sec']:.0f} | {o['requests']} | {rel} |")
            # Per tenant.
            print("\n| tenant | penalty (us) | " + " | ".join(
                f"{c}: hit / mean us / p99 us / hits/s" for c in have) + " |")
            print("|---|---:|" + "---:|" * len(have))
            names = [g["name"] for g in runs[(tag, pct, have[0])]["groups"]]
            for i, name in enumerate(names):
                cells = []
                for c in have:
                    g = runs[(tag, pct, c)]["groups"][i]
                    lat = g["latency_us"]
                    cells.append(f"{g['hit_ratio']:.3f} / {lat['mean']:.0f} / "
                                 f"{lat['p99']:.0f} / {g['hits_per_sec']:.0f}")
                pen = runs[(tag, pct, have[0])]["groups"][i]["miss_penalty_us"]
                print(f"| {name} | {pen:.0f} | " + " | ".join(cells) + " |")
            # What the tuner chose over time.
            for c in ("kredis", "kredis-ml", "kredis-k5", "static", "off"):
                if (tag, pct, c) not in runs:
                    continue
                series = tuner_series(runs[(tag, pct, c)])
                if not series:
                    continue
                if c.startswith("kredis"):
                    print(f"\n{c} tuner, target MiB / K over the measured run "
                          f"(TENANT INFO every {runs[(tag, pct, c)]['tenant_polls']['interval_s']:g} s; "
                          f"last column: used MiB at the end):\n")
                    for name in names:
                        pts = series.get(name, [])
                        cells = " ".join(
                            f"{p[0]:.0f}s:{mb(p[1] or 0):.1f}/K{p[2]:.0f}" for p in pts
                            if p[1] is not None and p[2] is not None)
                        used = pts[-1][3] if pts else None
                        used = f"{mb(used):.1f}" if used is not None else "?"
                        print(f"- {name}: {cells} (used {used})")
                else:
                    used = ", ".join(
                        f"{n} {mb(series[n][-1][3] or 0):.1f}" for n in names if n in series)
                    print(f"\n{c}: used MiB per tenant at the end: {used}")
            if "kredis" in have:
                k = runs[(tag, pct, "kredis")]["overall"]
                if base:
                    r = k["mean_of_group_means_us"] / base["mean_of_group_means_us"]
                    r_all = k["latency_us"]["mean"] / base["latency_us"]["mean"]
                    verdicts.append(
                        f"{tag} {pct} %: kredis / redis = {r:.3f} (mean of tenant means), "
                        f"{r_all:.3f} (all requests)"
                        + (f" -> bar (<= 0.8) {'MET' if r <= 0.8 else 'NOT MET'}"
                           if tag == "t4" and pct == 50 else ""))
                if (tag, pct, "off") in runs:
                    off = runs[(tag, pct, "off")]["overall"]
                    r = k["mean_of_group_means_us"] / off["mean_of_group_means_us"]
                    r_all = k["latency_us"]["mean"] / off["latency_us"]["mean"]
                    verdicts.append(
                        f"{tag} {pct} %: kredis / off = {r:.3f} (mean of tenant means), "
                        f"{r_all:.3f} (all requests) -> "
                        f"{'not worse' if r <= 1.0 else 'WORSE than off'}")
    if verdicts:
        print("\n### Bar\n")
        for v in verdicts:
            print(f"- {v}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/augur-kredis-bench")
