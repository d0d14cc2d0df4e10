"""The table a run prints (and the README's Performance section shows), and where a
measurement's figures are written (``saved``)."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _first_batches(name: str, result: dict[str, Any]) -> list[str]:
    """The first five batches after CREATE of every engine, apart from the median (a step a
    view's first steps pay shows there), and matview's slowest batch against Spark
    recompute's same batch."""
    firsts = [f"{engine} " + ", ".join(f"{t:.3f}" for t in result[engine]["batch_s"][:5])
              for engine in ("matview", "spark", "duckdb")
              if result.get(engine, {}).get("batch_s")]
    out = [f"{name}: first batches after CREATE (s): " + "; ".join(firsts)] if firsts else []
    ours, spark = result["matview"].get("batch_s", []), result.get("spark", {}).get("batch_s")
    if ours and spark:
        worst = max(range(len(ours)), key=lambda i: ours[i] / spark[i])
        out.append(f"{name}: slowest batch against Spark recompute's same batch: batch "
                   f"{worst + 1}, {ours[worst] / spark[worst]:.2f}x its time")
    return out


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
        extra += _first_batches(name, result)
        catchup = mv.get("catchup")
        if catchup:
            extra.append(
                f"{name}: catch-up of {catchup['batches']} batches ({catchup['updates']} "
                f"updates): {catchup['one_step_updates_per_s']:.0f} updates/s in one step vs "
                f"{catchup['stepped_updates_per_s']:.0f} stepped ({catchup['speedup']:.1f}x)")
        jobs = [j for j in mv.get("jobs_per_batch", []) if j is not None]
        py4j = mv.get("py4j_per_batch", [])
        if py4j:
            job_median = "-" if not jobs else f"{statistics.median(jobs):g}"
            released = mv.get("py4j_gc_per_batch", [])
            extra.append(
                f"{name}: per batch (commit and read every view), Spark jobs median "
                f"{job_median}, py4j calls median {statistics.median(py4j):g} "
                f"(max {max(py4j)})" + ("" if not released else
                                        f", and {statistics.median(released):g} releases of "
                                        "JVM objects by py4j's collector thread"))
        floor = mv.get("action_floor_s")
        recompute = result.get("spark", {}).get("latency", {}).get("median")
        if jobs and floor and recompute:
            per_batch = statistics.median(jobs)
            bound = per_batch * floor
            extra.append(
                f"{name}: one Spark action here costs at least {floor:.3f} s (measured in this "
                f"run), so {per_batch:g} jobs per batch one after another cost at least "
                + (f"{bound:.2f} s: at most {recompute / bound:.1f}x Spark recompute" if bound
                   else "nothing (its plans computed in the driver)"))
        steps = mv.get("refresh", {})
        if steps:
            extra.append(f"{name}: view steps (the first of each included) " + "; ".join(
                f"{view} {r['incremental']} incremental, {r['recompute']} recompute"
                + ("" if r["last"] is None else f", last {r['last']['strategy']} "
                                                  f"({r['last']['reason']})")
                for view, r in steps.items()))
        first, last = mv["state"][0], mv["state"][-1]
        memory = mv["memory"]
        heap = memory.get("peak_heap_bytes")
        extra.append(
            f"{name}: state after batch 1 / {len(mv['state'])}: table rows "
            f"{first['table_rows']} / {last['table_rows']} (live {last['live_rows']}), "
            f"view rows {first['view_rows']} / {last['view_rows']}, batches "
            f"{first['batches']} / {last['batches']}, table arrangement bytes per live row "
            f"{last.get('table_bytes', 0) / max(last['live_rows'], 1):.1f}, driver-held "
            f"{last['local_bytes'] / 2**20:.0f} MiB; JVM peak heap "
            f"{'-' if heap is None else f'{heap / 2**20:.0f} MiB'}, peak RSS "
            f"{(memory.get('peak_rss_bytes') or 0) / 2**20:.0f} MiB")
        extra.append(f"{name}: memory in use after each batch (median / max): " + ", ".join(
            f"{label} {_mib(mv['state'], key)}" for label, key in (
                ("driver JVM heap", "driver_heap_bytes"), ("Python RSS", "python_rss_bytes"),
                ("block managers' storage memory", "storage_memory_bytes"))))
    return "\n".join(lines + [""] + extra + [""] + targets(report))


def _mib(states: list[dict[str, Any]], key: str) -> str:
    """The median and the largest of ``key`` over ``states``, in MiB ("-" when unknown)."""
    known = [s[key] for s in states if s.get(key) is not None]
    if not known:
        return "-"
    return f"{statistics.median(known) / 2**20:.0f} / {max(known) / 2**20:.0f} MiB"


def targets(report: dict[str, Any]) -> list[str]:
    """The issue's targets that this run's figures speak to, each met or missed and by how
    much (W1 latency and ratio, W4 ratio, catch-up speedup, arrangement rows against input
    rows)."""
    out = []
    for result in report["results"]:
        name, mv = result["workload"], result["matview"]
        median = mv["latency"].get("median")
        spark = result.get("spark", {}).get("ratio_median")
        if name == "w1" and median is not None:
            out.append(_target("W1 median batch <= 0.4 s", median <= 0.4, f"{median:.3f} s"))
        if name == "w1" and spark is not None:
            out.append(_target("W1 >= 8x Spark recompute", spark >= 8, f"{spark:.2f}x"))
        if name == "w4" and spark is not None:
            out.append(_target("W4 >= 10x Spark recompute", spark >= 10, f"{spark:.2f}x"))
        catchup = mv.get("catchup")
        if catchup:
            out.append(_target(f"{name} catch-up >= 20x stepping", catchup["speedup"] >= 20,
                               f"{catchup['speedup']:.1f}x over {catchup['batches']} batches"))
        last = mv["state"][-1]
        ratio = last["table_rows"] / max(last["live_rows"], 1)
        out.append(_target(f"{name} arrangement rows <= 3x input rows", ratio <= 3,
                           f"{ratio:.2f}x"))
    return out


def _target(what: str, met: bool, figure: str) -> str:
    return f"target {what}: {'met' if met else 'MISSED'} ({figure})"


RESULTS = Path(__file__).parent / "results"


def saved(name: str, args: argparse.Namespace, figures: dict[str, Any], text: str) -> None:
    """Write a measurement's ``figures`` with the ``args`` it ran with to
    ``results/NAME.json``, then print ``text`` (its table) and where the figures are."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"args": vars(args), "figures": figures}, indent=1) + "\n")
    print(text)
    print(f"\nfigures: {path}")
