"""The table a run prints (and the README's Performance section shows)."""

from __future__ import annotations

from typing import Any


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(report: dict[str, Any]) -> str:
    """One line per workload and engine: build time, per-batch latency, ratio against
    matview; then a line per workload for catch-up and state."""
    session = report["environment"]["session"]
    lines = [f"session: {session}",
             "| workload | engine | build s | batch median s | p90 s | max s | x matview |",
             "|---|---|---:|---:|---:|---:|---:|"]
    extra = []
    for result in report["results"]:
        name = result["workload"]
        for engine in ("matview", "spark", "duckdb"):
            figures = result.get(engine)
            if figures is None:
                continue
            lat = figures["latency"]
            ratio = figures.get("ratio_median")
            lines.append(
                f"| {name} | {engine} | {_s(figures['build_s'])} | {_s(lat.get('median'))} "
                f"| {_s(lat.get('p90'))} | {_s(lat.get('max'))} "
                f"| {'-' if ratio is None else f'{ratio:.2f}x'} |")
        mv = result["matview"]
        catchup = mv.get("catchup")
        if catchup:
            extra.append(
                f"{name}: catch-up of {catchup['batches']} batches ({catchup['updates']} "
                f"updates): {catchup['one_step_updates_per_s']:.0f} updates/s in one step vs "
                f"{catchup['stepped_updates_per_s']:.0f} stepped ({catchup['speedup']:.1f}x)")
        first, last = mv["state"][0], mv["state"][-1]
        memory = mv["memory"]
        heap = memory.get("peak_heap_bytes")
        extra.append(
            f"{name}: state after batch 1 / {len(mv['state'])}: table rows "
            f"{first['table_rows']} / {last['table_rows']} (live {last['live_rows']}), "
            f"view rows {first['view_rows']} / {last['view_rows']}, batches "
            f"{first['batches']} / {last['batches']}; JVM peak heap "
            f"{'-' if heap is None else f'{heap / 2**20:.0f} MiB'}, peak RSS "
            f"{(memory.get('peak_rss_bytes') or 0) / 2**20:.0f} MiB")
    return "\n".join(lines + [""] + extra)
