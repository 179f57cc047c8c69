"""``teeny-plan``: pictures of an emitted launch plan (docs/plan-pictures.md).

    teeny-plan DIR -o PLAN.svg [--batch N] [--picture all|launches|arena]
               [--phase] [--max-buffers K]
    python -m teeny_ir.backend.show DIR -o PLAN.svg ...

``DIR`` is what ``emit-triton{out-dir=DIR}`` wrote. The pictures:

- launches: the launch order against the buffers each launch touches - x is
  the launch index, one row per arena buffer in order of first use, a mark
  where a launch reads it (hollow), writes it (filled) or both (filled,
  another colour), a grey line across the launches it is live; a collective
  (``all_reduce`` on the axis) is drawn as a launch reading its input and
  writing its output;
- arena: the arena's occupancy at ``--batch`` over the launches against the
  live-bytes bound (`occupancy`), and the address map - every buffer a
  rectangle across its lifetime, from its offset to its offset plus its size
  in the run's layout at that batch (`teeny_ir.backend.memory.layout`).

``--picture all`` (the default) puts the three panels in one figure. The
format is the ``-o`` suffix: ``.svg``, ``.png`` or ``.pdf``; the same plan and
options give the same bytes (no date, a fixed SVG hash salt, Matplotlib's
default style whatever the user's matplotlibrc says). The data plotted are
the pure functions `touches` and `occupancy`; Matplotlib (the ``dev`` and
``examples`` extras) is imported only when a picture is drawn.

A plan is valid at every batch ``B >= 1`` its launches can be proven at
(`teeny_ir.backend.plan.check_at_batch`: the loader proves 1..64, larger ones
are proven when asked); a plan whose inputs have no ``B`` dimension has the
one batch 1. ``--batch`` defaults to the smallest, 1.

Exit codes: 0 success (one summary line on stdout); 1 bad usage or input
(one line ``teeny-plan: error: ...``, never a traceback); 2 a bug of
teeny_ir (one ``internal error`` line).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from teeny_ir.backend import memory
from teeny_ir.backend.memory import ALIGNMENT, MemoryPlanError
from teeny_ir.backend.plan import (
    PHASES,
    CollectiveSpec,
    Plan,
    PlanError,
    check_at_batch,
    is_batch_dim,
    load_plan,
)
from teeny_ir.core.cli import ArgumentParser, parse_args
from teeny_ir.core.files import OutputError, check_not_input, check_output, write_bytes
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.families import FAMILIES

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PROG = "teeny-plan"
FORMATS = ("svg", "png", "pdf")
PICTURES = ("all", "launches", "arena")
MAX_BUFFERS = 64
"""Rows of the launch chart by default: the largest buffers at the batch, shown
in order of first use (``--max-buffers`` changes it)."""
INSTALL = "pip install -e '.[examples]'"
"""Where Matplotlib comes from (the ``dev`` extra has it too)."""

READ, WRITE, READ_WRITE = "read", "write", "read-write"
_ACCESS = {"input": READ, "param": READ, "output": WRITE}
"""ABI pointer kind -> what the launch does to the tensor."""


class ShowError(Exception):
    """Bad input for a picture: a batch out of the plan's range, an option the
    plan cannot take, an output format that is not known."""


# --- the data ------------------------------------------------------------------


def touches(plan: Plan) -> tuple[dict[str, str], ...]:
    """Per launch, in plan order: arena buffer -> `READ`, `WRITE` or
    `READ_WRITE`, in the order the launch's arguments name them. A view's
    access is its base's; plan inputs and parameters are not in the arena and
    not listed. A collective reads its input and writes its output (one
    buffer read and written when it reduces in place)."""
    bases = {view.name: view.base for view in plan.views}
    buffers = {spec.name for spec in plan.buffers}
    families = {kernel.name: FAMILIES[kernel.family] for kernel in plan.kernels}
    found: list[dict[str, str]] = []
    for launch in plan.launches:
        access: dict[str, str] = {}
        kinds = (
            ("input", "output")
            if isinstance(launch, CollectiveSpec)
            else tuple(abi.kind for abi in families[launch.kernel].args)
        )
        for abi_kind, arg in zip(kinds, launch.args, strict=True):
            kind = _ACCESS.get(abi_kind)
            if kind is None or arg.tensor is None:
                continue
            name = bases.get(arg.tensor, arg.tensor)
            if name not in buffers:
                continue
            before = access.get(name)
            access[name] = kind if before in (None, kind) else READ_WRITE
        found.append(access)
    return tuple(found)


def first_use_order(plan: Plan, touched: Sequence[Mapping[str, str]]) -> list[str]:
    """The plan's buffers by the first launch that touches them (ties in plan
    order); a buffer no launch touches last."""
    first: dict[str, int] = {}
    for index, access in enumerate(touched):
        for name in access:
            first.setdefault(name, index)
    end = len(touched)
    ranked = sorted(
        enumerate(plan.buffers), key=lambda item: (first.get(item[1].name, end), item[0])
    )
    return [spec.name for _, spec in ranked]


@dataclass(frozen=True)
class Span:
    """One buffer in a run's layout: live across launches ``first..last``
    (inclusive, `teeny_ir.backend.memory.intervals`), ``offset`` bytes into
    the arena, ``size`` bytes of data, ``reserved`` bytes held for it by the
    placement (its size rounded up to `ALIGNMENT`; a per-image buffer of the
    plan's own B-affine placement holds ``B`` aligned images)."""

    name: str
    first: int
    last: int
    offset: int
    size: int
    reserved: int
    per_image: bool


@dataclass(frozen=True)
class Occupancy:
    """The arena at one batch over the launches. ``live_bytes[i]``: the bytes
    of the buffers live at launch ``i``, whose maximum is the live-bytes bound
    (`teeny_ir.backend.memory.lower_bound_bytes`); ``top[i]``: the highest
    byte the layout holds for a buffer live at launch ``i`` (its offset plus
    its reserved bytes), whose maximum is the arena. ``top[i] - live_bytes[i]``
    is what the placement leaves unused below the live buffers at launch
    ``i`` (gaps and alignment). The byte figures are those ``memory(batch)``
    of the runtime reports."""

    batch: int
    joint: bool
    spans: tuple[Span, ...]
    live_bytes: tuple[int, ...]
    top: tuple[int, ...]
    arena_bytes: int
    plan_arena_bytes: int
    lower_bound_bytes: int
    naive_bytes: int

    @property
    def ratio(self) -> float | None:
        """``arena_bytes / lower_bound_bytes`` (None without buffers)."""
        return self.arena_bytes / self.lower_bound_bytes if self.lower_bound_bytes else None


def occupancy(plan: Plan, batch: int) -> Occupancy:
    """The arena's occupancy for a run of ``plan`` at ``batch`` (its layout
    from `teeny_ir.backend.memory.layout`). Raises MemoryPlanError for a batch
    below 1, PlanError when the layout's proof fails."""
    placed = memory.layout(plan, batch)
    live = memory.intervals(plan)
    spans: list[Span] = []
    for spec in plan.buffers:
        size = memory.buffer_bytes(spec)
        if size.per_batch and not placed.joint:  # the plan's per-image region
            reserved = batch * _aligned(size.per_batch + size.constant)
        else:
            reserved = _aligned(size.at(batch))
        first, last = live[spec.name]
        offset = placed.offsets[spec.name]
        spans.append(
            Span(spec.name, first, last, offset, size.at(batch), reserved, bool(size.per_batch))
        )
    count = len(plan.launches)
    live_bytes = [0] * count
    top = [0] * count
    for span in spans:
        for index in range(span.first, min(span.last, count - 1) + 1):
            live_bytes[index] += span.size
            top[index] = max(top[index], span.offset + span.reserved)
    return Occupancy(
        batch=batch,
        joint=placed.joint,
        spans=tuple(spans),
        live_bytes=tuple(live_bytes),
        top=tuple(top),
        arena_bytes=placed.arena,
        plan_arena_bytes=memory.arena_bytes(plan, batch),
        lower_bound_bytes=memory.lower_bound_bytes(plan, batch),
        naive_bytes=memory.naive_bytes(plan, batch),
    )


def _aligned(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def batch_range(plan: Plan) -> tuple[int, int | None]:
    """The smallest and largest batch the plan takes (None: no fixed largest;
    each batch above 64 is proven when asked, `check_batch`)."""
    if any(is_batch_dim(dim) for spec in plan.inputs for dim in spec.shape):
        return 1, None
    return 1, 1


def check_batch(plan: Plan, batch: int) -> None:
    """Raise ShowError unless ``plan`` runs at ``batch``."""
    smallest, largest = batch_range(plan)
    if largest is not None and not smallest <= batch <= largest:
        raise ShowError(
            f"--batch {batch}: the plan's inputs have no '{BATCH}' dimension, "
            f"so its only batch is {smallest}"
        )
    if batch < smallest:
        raise ShowError(f"--batch {batch}: the batch size must be at least {smallest}")
    try:
        check_at_batch(plan, batch)
    except PlanError as err:
        raise ShowError(f"--batch {batch} is out of the plan's range: {err}") from None


def buffer_labels(plan: Plan, occupied: Occupancy) -> dict[str, str]:
    """Row labels: name, size at the batch, and what the buffer is besides an
    intermediate (an output and its role, a status output)."""
    bases = {view.name: view.base for view in plan.views}
    what: dict[str, str] = {}
    for index, name in enumerate(plan.outputs):
        role, of = plan.role(index)
        text = f"{role} {of}" if role else f"output {index}"
        base = bases.get(name, name)
        what[base] = f"{what[base]}, {text}" if base in what else text
    for name in sorted(memory.status_buffers(plan)):
        base = bases.get(name, name)
        what.setdefault(base, "status")
    return {
        span.name: f"{span.name} {format_bytes(span.size)}"
        + (f" [{what[span.name]}]" if span.name in what else "")
        for span in occupied.spans
    }


def format_bytes(size: int) -> str:
    """``512 B``, ``12.5 KiB``, ``1.50 MiB``, ``2.00 GiB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024**2:
        return f"{size / 1024:.1f} KiB"
    if size < 1024**3:
        return f"{size / 1024**2:.2f} MiB"
    return f"{size / 1024**3:.2f} GiB"


# --- drawing ---------------------------------------------------------------------

_COLOURS = {READ: "tab:blue", WRITE: "tab:red", READ_WRITE: "tab:purple"}
_PHASE_COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "update": "tab:green"}
_REGION_COLOURS = {True: "#9ecae1", False: "#fdae6b"}  # per-image, static
_LEGEND: dict[str, Any] = {
    "loc": "upper left",
    "bbox_to_anchor": (1.005, 1.0),
    "fontsize": 6,
    "frameon": False,
}
"""Legends right of their panel, never over the data."""
_SVG_SALT = "teeny-plan"
_METADATA: dict[str, dict[str, Any]] = {
    "svg": {"Date": None},
    "pdf": {"CreationDate": None},
    "png": {},
}


@dataclass(frozen=True)
class Options:
    """What to draw: the picture (`PICTURES`), launches coloured by phase, and
    the rows of the launch chart at most."""

    picture: str = "all"
    phase: bool = False
    max_buffers: int = MAX_BUFFERS


def draw(plan: Plan, batch: int, options: Options) -> Figure:
    """The figure of ``plan`` at ``batch`` (`render_picture` draws it in
    Matplotlib's default style). Raises ShowError for ``phase`` on a plan
    without phases."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if options.phase and not any(launch.phase for launch in plan.launches):
        raise ShowError("--phase: the plan's launches have no phases (it is not a training plan)")
    occupied = occupancy(plan, batch)
    touched = touches(plan)
    rows = _rows(plan, touched, occupied, options.max_buffers)
    count = max(len(plan.launches), 1)
    width = min(max(9.0, 5.5 + 0.14 * count), 60.0)
    heights: list[float] = []
    if options.picture in ("all", "launches"):
        heights.append(1.2 + 0.15 * max(len(rows), 1))
    if options.picture in ("all", "arena"):
        heights += [2.6, 3.4]
    extra = 1.6 if len(plan.launches) <= _NAMED_LAUNCHES else 0.6  # the x labels
    figure = Figure(figsize=(width, sum(heights) + extra), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(heights), 1, sharex=True, height_ratios=heights, squeeze=False)
    panels = [axes[i][0] for i in range(len(heights))]
    if options.picture in ("all", "launches"):
        _launch_chart(panels.pop(0), plan, touched, occupied, rows, options)
    if options.picture in ("all", "arena"):
        _occupancy_chart(panels[0], plan, occupied, options)
        _address_map(panels[1], plan, occupied, options, width)
    _launch_axis(axes[-1][0], plan)
    figure.suptitle(_title(plan, occupied), fontsize=9)
    return figure


_NAMED_LAUNCHES = 160
"""Up to this many launches, each has its index and kernel family on the x axis."""


def _rows(
    plan: Plan,
    touched: Sequence[Mapping[str, str]],
    occupied: Occupancy,
    max_buffers: int,
) -> list[str]:
    """The launch chart's buffers, in order of first use: all of them, or the
    ``max_buffers`` largest at the batch."""
    order = first_use_order(plan, touched)
    if len(order) <= max_buffers:
        return order
    sizes = {span.name: span.size for span in occupied.spans}
    rank = {name: index for index, name in enumerate(order)}
    kept = set(sorted(order, key=lambda name: (-sizes[name], rank[name]))[:max_buffers])
    return [name for name in order if name in kept]


def _launch_chart(
    axes: Axes,
    plan: Plan,
    touched: Sequence[Mapping[str, str]],
    occupied: Occupancy,
    rows: Sequence[str],
    options: Options,
) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    row_of = {name: index for index, name in enumerate(rows)}
    spans = {span.name: span for span in occupied.spans}
    end = max(len(plan.launches) - 1, 0)
    lifetimes = [
        [(spans[name].first, row), (min(spans[name].last, end), row)]
        for name, row in row_of.items()
    ]
    axes.add_collection(
        LineCollection(lifetimes, colors="0.75", linewidths=2.5, zorder=1, gid="lifetimes")
    )
    if options.phase:
        _phase_bands(axes, plan)
    for index, access in enumerate(touched):
        marks = [(row_of[name], kind) for name, kind in access.items() if name in row_of]
        colour = _COLOURS
        if options.phase:
            phase = _PHASE_COLOURS.get(plan.launches[index].phase, "black")
            colour = dict.fromkeys(_COLOURS, phase)
        faces = ["white" if kind == READ else colour[kind] for _, kind in marks]
        edges = [
            "black" if options.phase and kind == READ_WRITE else colour[kind] for _, kind in marks
        ]
        axes.scatter(
            [index] * len(marks),
            [row for row, _ in marks],
            s=22,
            marker="s",
            c=faces or None,
            edgecolors=edges or None,
            linewidths=1.0,
            zorder=3,
            gid=f"launch-{index}",
        )
    labels = buffer_labels(plan, occupied)
    axes.set_yticks(range(len(rows)), [labels[name] for name in rows], fontsize=6)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    shown = len(rows)
    total = len(plan.buffers)
    axes.set_ylabel(
        f"buffers by first use ({shown} largest of {total})"
        if shown < total
        else f"buffers by first use ({total})"
    )
    axes.set_title(
        "launches and the arena buffers they read (hollow) and write (filled); grey: live",
        fontsize=8,
        loc="left",
    )
    handles = [
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor=_COLOURS[READ],
            label=READ,
        ),
        Line2D([], [], marker="s", linestyle="", color=_COLOURS[WRITE], label=WRITE),
        Line2D([], [], marker="s", linestyle="", color=_COLOURS[READ_WRITE], label=READ_WRITE),
    ]
    if options.phase:
        handles = _phase_handles(plan)
    axes.legend(handles=handles, **_LEGEND)
    axes.grid(axis="x", color="0.92", linewidth=0.5)


def _occupancy_chart(axes: Axes, plan: Plan, occupied: Occupancy, options: Options) -> None:
    scale, unit = _unit(max(occupied.arena_bytes, occupied.plan_arena_bytes, 1))
    if options.phase:
        _phase_bands(axes, plan)
    edges = [index - 0.5 for index in range(len(plan.launches) + 1)]
    axes.stairs(
        [value / scale for value in occupied.live_bytes],
        edges,
        fill=True,
        color="tab:blue",
        alpha=0.35,
        label="live bytes (their maximum is the bound)",
        gid="occupancy-live",
    )
    axes.stairs(
        [value / scale for value in occupied.top],
        edges,
        baseline=None,
        color="tab:red",
        linewidth=1.2,
        label="arena in use (highest byte held for a live buffer)",
        gid="occupancy-top",
    )
    axes.axhline(
        occupied.arena_bytes / scale,
        color="black",
        linewidth=1.0,
        label=f"arena at B={occupied.batch}: {format_bytes(occupied.arena_bytes)}",
        gid="arena-line",
    )
    axes.axhline(
        occupied.lower_bound_bytes / scale,
        color="tab:blue",
        linestyle="--",
        linewidth=1.0,
        label=f"live-bytes bound: {format_bytes(occupied.lower_bound_bytes)}",
        gid="bound-line",
    )
    if occupied.plan_arena_bytes != occupied.arena_bytes:
        axes.axhline(
            occupied.plan_arena_bytes / scale,
            color="0.5",
            linestyle=":",
            linewidth=1.0,
            label=f"plan's arena (every B) at B={occupied.batch}: "
            f"{format_bytes(occupied.plan_arena_bytes)}",
            gid="plan-arena-line",
        )
    axes.set_ylim(0, max(occupied.arena_bytes, occupied.plan_arena_bytes, 1) / scale * 1.12)
    axes.set_ylabel(f"bytes ({unit})")
    axes.set_title("arena occupancy over the launches", fontsize=8, loc="left")
    axes.legend(**_LEGEND)


def _address_map(
    axes: Axes, plan: Plan, occupied: Occupancy, options: Options, width: float
) -> None:
    from matplotlib.patches import Patch, Rectangle

    scale, unit = _unit(max(occupied.arena_bytes, 1))
    if options.phase:
        _phase_bands(axes, plan)
    end = max(len(plan.launches) - 1, 0)
    # the panel: the figure less the labels and the legend, about 4 inches
    per_launch = (width - 4.0) * 72 / (end + 1)
    for span in occupied.spans:
        last = min(span.last, end)
        axes.add_patch(
            Rectangle(
                (span.first - 0.45, span.offset / scale),
                last - span.first + 0.9,
                span.size / scale,
                facecolor=_REGION_COLOURS[span.per_image],
                edgecolor="0.25",
                linewidth=0.5,
                gid=f"buffer-{span.name}",
            )
        )
        if _fits(span.name, last - span.first + 1, span.size, occupied.arena_bytes, per_launch):
            axes.text(
                (span.first + last) / 2,
                (span.offset + span.size / 2) / scale,
                span.name,
                ha="center",
                va="center",
                fontsize=5.5,
                clip_on=True,
            )
    axes.axhline(occupied.arena_bytes / scale, color="black", linewidth=1.0)
    axes.set_ylim(0, max(occupied.arena_bytes, 1) / scale * 1.05)
    axes.set_ylabel(f"arena offset ({unit})")
    layout = "joint layout at this batch" if occupied.joint else "the plan's own B-affine layout"
    axes.set_title(
        f"address map ({layout}): a buffer from its offset to offset + size, across its lifetime",
        fontsize=8,
        loc="left",
    )
    kinds = sorted({span.per_image for span in occupied.spans}, reverse=True)
    names = {True: f"per-image (x {BATCH})", False: "static"}
    axes.legend(
        handles=[
            Patch(facecolor=_REGION_COLOURS[kind], edgecolor="0.25", label=names[kind])
            for kind in kinds
        ],
        **_LEGEND,
    )


def _fits(name: str, launches: int, size: int, arena: int, per_launch: float) -> bool:
    """Whether a buffer's name fits in its rectangle of the address map: about
    0.6 em a character at 5.5 points across ``launches`` launches of
    ``per_launch`` points each, and 7 of the panel's about 210 points high."""
    return launches * per_launch >= 0.6 * 5.5 * len(name) + 4 and size * 210 >= 7 * max(arena, 1)


def _launch_axis(axes: Axes, plan: Plan) -> None:
    count = len(plan.launches)
    axes.set_xlim(-0.6, max(count - 1, 0) + 0.6)
    axes.set_xlabel("launch (plan order)")
    if 0 < count <= _NAMED_LAUNCHES:
        families = {kernel.name: kernel.family for kernel in plan.kernels}
        names = [
            launch.collective if isinstance(launch, CollectiveSpec) else families[launch.kernel]
            for launch in plan.launches
        ]
        labels = [f"{i} {name}" for i, name in enumerate(names)]
        axes.set_xticks(range(count), labels, rotation=90, fontsize=5.5)


def _phase_bands(axes: Axes, plan: Plan) -> None:
    """Shade each run of launches of one phase."""
    start = 0
    for index in range(1, len(plan.launches) + 1):
        phase = plan.launches[start].phase
        if index == len(plan.launches) or plan.launches[index].phase != phase:
            axes.axvspan(
                start - 0.5,
                index - 0.5,
                color=_PHASE_COLOURS.get(phase, "0.5"),
                alpha=0.08,
                linewidth=0,
                zorder=0,
            )
            start = index


def _phase_handles(plan: Plan) -> list[Any]:
    from matplotlib.lines import Line2D

    present = [phase for phase in PHASES if any(launch.phase == phase for launch in plan.launches)]
    handles: list[Any] = [
        Line2D([], [], marker="s", linestyle="", color=_PHASE_COLOURS[phase], label=phase)
        for phase in present
    ]
    handles += [
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor="black",
            label="read (hollow)",
        ),
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markerfacecolor="0.4",
            markeredgecolor="0.4",
            label="write (filled)",
        ),
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markerfacecolor="0.4",
            markeredgecolor="black",
            label="read-write (black edge)",
        ),
    ]
    return handles


def _unit(size: int) -> tuple[int, str]:
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if size >= 1024**power:
            return 1024**power, unit
    return 1, "B"


def _title(plan: Plan, occupied: Occupancy) -> str:
    ratio = occupied.ratio
    against = f" = {ratio:.3f} x the live-bytes bound" if ratio is not None else ""
    kind = "training plan" if any(launch.phase for launch in plan.launches) else "plan"
    return (
        f"{kind} @{plan.function}: {len(plan.launches)} launches, {len(plan.buffers)} buffers, "
        f"memory={plan.memory}\n"
        f"at {BATCH}={occupied.batch} the arena is {format_bytes(occupied.arena_bytes)}{against} "
        f"({format_bytes(occupied.lower_bound_bytes)}); the plan's arena (every {BATCH}) "
        f"{format_bytes(occupied.plan_arena_bytes)}, one buffer each "
        f"{format_bytes(occupied.naive_bytes)}"
    )


def render_picture(plan: Plan, batch: int, options: Options, fmt: str) -> bytes:
    """The picture's bytes in ``fmt`` (one of `FORMATS`), the same for the same
    plan and options. Raises ShowError, and ImportError without Matplotlib."""
    import matplotlib
    import matplotlib.style

    # The default style whatever a matplotlibrc says; a fixed salt for the SVG's
    # ids; text as text (small files, searchable), in 8 points.
    with (
        matplotlib.style.context("default"),
        matplotlib.rc_context({"svg.hashsalt": _SVG_SALT, "svg.fonttype": "none", "font.size": 8}),
    ):
        figure = draw(plan, batch, options)
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, metadata=_METADATA[fmt], dpi=100)
    return buffer.getvalue()


# --- the command -----------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _make_parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=PROG,
        description="Draw a launch plan written by emit-triton{out-dir=DIR}: the launches and "
        "the buffers they touch, the arena's occupancy against the live-bytes bound, and its "
        "address map (docs/plan-pictures.md).",
    )
    parser.add_argument("directory", metavar="DIR", help="the emitted plan directory")
    parser.add_argument(
        "-o", dest="output", required=True, metavar="OUT", help="the picture: .svg, .png or .pdf"
    )
    parser.add_argument(
        "--batch",
        type=_positive,
        default=None,
        metavar="N",
        help="the batch size of the memory layout (default: the plan's smallest, 1)",
    )
    parser.add_argument(
        "--picture",
        choices=PICTURES,
        default="all",
        help="all: the three panels; launches: the launch/buffer chart; arena: the "
        "occupancy and the address map",
    )
    parser.add_argument(
        "--phase",
        action="store_true",
        help="colour the launches by phase (forward, backward, update: training plans)",
    )
    parser.add_argument(
        "--max-buffers",
        type=_positive,
        default=MAX_BUFFERS,
        metavar="K",
        help=f"at most K rows in the launch chart, the largest buffers (default {MAX_BUFFERS})",
    )
    return parser


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-plan in-process; returns the exit code."""
    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    try:
        summary = _run(args)
    except (OutputError, PlanError, MemoryPlanError, ShowError) as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 1
    except ImportError as err:
        if "matplotlib" not in str(err):
            stderr.write(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}\n")
            return 2
        stderr.write(f"{PROG}: error: drawing a plan needs Matplotlib: {INSTALL}\n")
        return 1
    except Exception as err:  # noqa: BLE001 - a bug of teeny_ir: one line, exit 2
        stderr.write(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}\n")
        return 2
    stdout.write(f"{PROG}: {summary}\n")
    return 0


def _run(args: argparse.Namespace) -> str:
    output: str = args.output
    check_output(output)
    directory = _plan_directory(args.directory)
    check_not_input(output, os.path.join(directory, "plan.json"))
    plan = load_plan(directory)
    for kernel in plan.kernels:
        for name in (kernel.file, *(c.cubin for c in kernel.compiled)):
            check_not_input(output, os.path.join(directory, name))
    fmt = _format_of(output)
    import matplotlib  # noqa: F401 - missing: one line, before the drawing

    batch = batch_range(plan)[0] if args.batch is None else args.batch
    check_batch(plan, batch)
    options = Options(args.picture, args.phase, args.max_buffers)
    data = render_picture(plan, batch, options, fmt)
    write_bytes(output, data, sys.stdout)
    occupied = occupancy(plan, batch)
    ratio = f" = {occupied.ratio:.3f} x the bound" if occupied.ratio is not None else ""
    return (
        f"wrote '{output}' ({len(plan.launches)} launches, {len(plan.buffers)} buffers; "
        f"arena {occupied.arena_bytes} bytes at B={batch}{ratio})"
    )


def _format_of(output: str) -> str:
    suffix = Path(output).suffix.lower().removeprefix(".")
    if suffix not in FORMATS:
        raise ShowError(
            f"cannot tell the picture format of '{output}': give -o a path ending in "
            + ", ".join(f".{f}" for f in FORMATS[:-1])
            + f" or .{FORMATS[-1]}"
        )
    return suffix


def _plan_directory(given: str) -> str:
    """``given`` when it is a directory; a PlanError saying what it is otherwise."""
    path = Path(given)
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except (OSError, ValueError) as err:
        raise PlanError(f"cannot read plan directory '{given}': {err}") from None
    if is_dir:
        return given
    if exists and path.name == "plan.json":
        raise PlanError(
            f"'{given}' is the plan file; give its directory '{os.path.dirname(given) or '.'}'"
        )
    if exists:
        raise PlanError(f"'{given}' is a file, not a plan directory (the out-dir of emit-triton)")
    raise PlanError(f"plan directory '{given}' does not exist")


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
