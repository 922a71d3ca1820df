"""The sections of a results report: device facts, where a file came from, diagnostics as
the terminal prints them, and the figures as inline SVG."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cudabench.common.units import format_bytes
from cudabench.insight import roofs
from cudabench.render import plot
from cudabench.render.html_page import esc, table_html
# the page's diagnostics are the markdown's: kept here for the API's import too
from cudabench.render.run_table import diagnostic_lines as diagnostic_lines
from cudabench.results.model import DeviceInfo, ResultsFile, RunOutcome

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def facts_html(pairs: Iterable[tuple[str, object]]) -> str:
    items = "".join(f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>" for key, value in pairs)
    return f'<dl class="facts">{items}</dl>'


# NVML settings by their key in the file: a label, and how to show the value.
SETTINGS: dict[str, tuple[str, str]] = {
    "power_limit_w": ("power limit", "{:,.0f} W"),
    "ecc_enabled": ("ECC", ""),
    "mig_enabled": ("MIG", ""),
    "persistence_enabled": ("persistence mode", ""),
    "max_sm_clock_mhz": ("max SM clock", "{:,.0f} MHz"),
    "max_memory_clock_mhz": ("max memory clock", "{:,.0f} MHz"),
    "pcie_max_generation": ("PCIe generation (max)", "Gen {}"),
    "pcie_max_width": ("PCIe width (max)", "x{}"),
}


def _setting(key: str, value: Any) -> tuple[str, str]:
    """Return a setting's label and value as people read them (unknown keys as they are)."""
    label, template = SETTINGS.get(key, (key.replace("_", " "), ""))
    if key == "pcie_peak_bytes_per_s" and isinstance(value, (int, float)):
        return "PCIe peak", f"{value / 1e9:,.1f} GB/s"
    if isinstance(value, bool):
        return label, "on" if value else "off"
    if template and isinstance(value, (int, float)):
        return label, template.format(value)
    return label, f"{value:,.6g}" if isinstance(value, float) else str(value)


def device_facts(device: DeviceInfo) -> list[tuple[str, str]]:
    """Return a device's facts: model, clocks, memory, driver, NVML settings and roofs."""
    pairs: list[tuple[str, object]] = [
        ("compute capability", device.compute_capability),
        ("SMs", device.sm_count),
        ("SM clock (max)", f"{device.sm_clock_khz / 1e3:.0f} MHz"),
        ("memory clock", f"{device.memory_clock_khz / 1e3:.0f} MHz"),
        ("memory bus", f"{device.memory_bus_bits} bit"),
        ("memory", format_bytes(device.memory_bytes)),
        ("L2 cache", format_bytes(device.l2_bytes)),
        ("CUDA index", device.index),
        ("PCI bus id", device.pci_bus_id or "-"),
        ("UUID", device.uuid or "-"),
        ("driver (CUDA version it supports)", device.driver_version),
        ("CUDA the engine was built with", device.cuda_version),
    ]
    pairs += [_setting(key, value) for key, value in device.settings.items()]
    pairs.append(("roofs", roofs.describe(roofs.Roofs.of(device)).removeprefix("roofs: ")))
    return [(key, str(value)) for key, value in pairs]


def device_html(device: DeviceInfo) -> str:
    """Return one device's facts under its name."""
    return f"<h3>{esc(device.name)}</h3>\n{facts_html(device_facts(device))}"


def device_label(device: DeviceInfo) -> str:
    """Name a device for a column head, briefly: CUDA index and the start of its UUID (the
    model is the table's first row)."""
    return f"GPU {device.index}{', ' + device.uuid[:12] if device.uuid else ''}"


def devices_html(devices: Sequence[DeviceInfo]) -> str:
    """Return the devices' facts: a list for one device; for several, a table with a column
    per device, a fact's row in bold where the devices differ (the roofs' long text under
    the table, once where they agree)."""
    if not devices:
        return '<p class="note">No device recorded (a file older than schema 2).</p>'
    if len(devices) == 1:
        return device_html(devices[0])
    facts = [{"model": device.name, **dict(device_facts(device))} for device in devices]
    keys = list(dict.fromkeys(key for fact in facts for key in fact if key != "roofs"))
    rows = []
    for key in keys:
        values = [fact.get(key, "-") for fact in facts]
        style = "differs" if len(set(values)) > 1 else ""
        rows.append([(key, "")] + [(value, style) for value in values])
    roof_lines = dict.fromkeys(fact["roofs"] for fact in facts)
    roof_text = "".join(f"<li>{esc(line)}</li>" for line in roof_lines)
    return (table_html(["", *map(device_label, devices)], rows)
            + f'\n<ul class="caption"><li>roofs{" (each device)" if len(roof_lines) > 1 else ""}'
              f':</li>{roof_text}</ul>')


def file_html(results: ResultsFile) -> str:
    meta = results.metadata
    command = meta.get("command")
    pairs: list[tuple[str, object]] = [
        ("created", meta.get("created", "-")),
        ("command", shlex.join(map(str, command)) if isinstance(command, list) else "-"),
        ("host", meta.get("host", "-")),
        ("git commit", f"{meta.get('git_commit') or '-'}"
                       f"{' (dirty)' if meta.get('git_dirty') else ''}"),
        ("schema version", results.schema_version),
        ("benchmarks", len(results.benchmarks)),
    ]
    if meta.get("complete") is False:
        pairs.append(("complete", "no: its run stopped early, or has not ended"))
    return facts_html(pairs)


def svg_figure(figure: Figure, alt: str) -> str:
    """Return a matplotlib figure as an inline <svg> that scales to its box, named for a
    screen reader."""
    svg = plot.svg_text(figure)
    return ("<figure>" + svg.replace(
        "<svg", f'<svg class="figure" role="img" aria-label="{esc(alt)}"', 1) + "</figure>")


def figures_html(outcome: RunOutcome) -> str:
    """Return the throughput panels and a roofline per device as inline SVG (a note where
    there is no roofline, or where a variant's configurations were too many to draw them
    all), or a note without matplotlib (the page is still complete)."""
    if not plot.available():
        return f'<p class="note">No figures: {esc(plot.HINT)}.</p>'
    panels = plot.panel_figures(outcome.results)
    parts = []
    if panels:
        parts.append('<div class="figures">' + "".join(
            svg_figure(figure, alt) for alt, figure in panels) + "</div>")
    else:
        parts.append(f'<p class="note">No figures: {esc(plot.NO_THROUGHPUT)}.</p>')
    parts += [f'<p class="note">{esc(line)}.</p>'
              for line in plot.left_out(outcome.results, "the tables below list every one")]
    if panels and not plot.roofline_rows(outcome.results):
        parts.append(f'<p class="note">No {esc(plot.NO_ROOFLINE.removeprefix("no "))}.</p>')
    return "\n".join(parts)
