#!/usr/bin/env python3
"""bench/gpu/ncu_summary.py CSV BENCH: one Markdown row per kernel launch
of an `ncu --csv --metrics ...` run (bench/gpu/ncu-kernels.sh).

ncu's CSV has one line per (launch, metric): "ID", ..., "Kernel Name",
..., "Metric Name", "Metric Unit", "Metric Value" (values with thousands
separators). Lines that are not CSV (the program's own output, ==PROF==
messages) are skipped. Standard library only."""
import csv
import sys

TIME_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
BYTES = {"byte": 1, "B": 1, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9,
         "GB": 1e9}


def value(unit, v):
    base = unit.split("/")[0]
    if base in TIME_US:
        return v * TIME_US[base]
    if base in BYTES:
        return v * BYTES[base]
    return v


def main():
    path, bench = sys.argv[1], sys.argv[2]
    with open(path, newline="", errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    rows, order = {}, []
    for r in csv.DictReader(lines):
        key = r.get("ID")
        if key not in rows:
            rows[key] = {"name": r.get("Kernel Name", "?")}
            order.append(key)
        try:
            v = float(r.get("Metric Value", "").replace(",", ""))
        except ValueError:
            continue
        rows[key][r["Metric Name"]] = value(r.get("Metric Unit", ""), v)
    for k in order:
        m = rows[k]
        name = m["name"]
        name = name if len(name) <= 48 else name[:45] + "..."
        us = m.get("gpu__time_duration.sum", 0)
        dram = m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)
        smem = (m.get("launch__shared_mem_per_block_static", 0) +
                m.get("launch__shared_mem_per_block_dynamic", 0))
        print("| %s | `%s` | %d x %d | %d | %d | %.0f | %.1f | %.1f | %.0f |" % (
            bench, name.replace("|", "\\|"), m.get("launch__grid_size", 0),
            m.get("launch__block_size", 0), m.get("launch__registers_per_thread", 0), smem,
            m.get("sm__warps_active.avg.pct_of_peak_sustained_active", 0), us, dram / 1e6,
            dram / us / 1e3 if us else 0))


if __name__ == "__main__":
    main()
