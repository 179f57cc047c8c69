"""The memory plan: liveness over the launch order and one arena for every buffer.

A buffer is live from the first launch that touches it (its first writer: the
loader proves no launch reads a buffer before launches wrote it) to the last
launch that reads it. A collective is a launch here: it reads its input and
writes its output (the same buffer when it reduces in place). Plan outputs and status outputs (read after the run)
stay live to the end. A view's reads and writes are its base's. Inputs and
parameters are not in the arena.

Placement is Pisarchyk & Lee's (2020) greedy planning, as TFLite's arena
planner does it: buffers in order of size (``size``), or of size x lifetime
(``size-lifetime``), each into the lowest gap that no placed buffer with an
intersecting lifetime uses; ``search`` improves the better greedy order by a
seeded local search (swaps that do not grow the arena, until the live-bytes
bound); ``best`` keeps the smallest arena, ``naive`` puts one buffer after the
other (no reuse).

Two placements, by the same strategy. The plan's (`place`, `with_memory`)
holds for every batch: sizes are affine in the batch ``B``, the
B-proportional buffers are planned in per-image bytes in a first region and
the static ones in a second region after it, so every offset and the arena
size are expressions ``B * P + Q`` of the shape grammar
(`teeny_ir.core.expressions`). Neither region can use the other's gaps: in a
training plan the static gradients and optimizer state cannot take the bytes
the per-image activations leave once the backward has read them (YOLOv8n's at
64x64 and ``B = 16`` needs 1.63 x the bound that way). A run knows
its batch: `layout` places every buffer at its size at that batch, per-image
and static together, and keeps the plan's placement where that is no larger,
so a run's arena is at most the plan's ``arena`` at that batch. Offsets are
multiples of `ALIGNMENT` bytes in both.

The proofs that a placement is safe are the plan module's: the loader's for
the plan's placement at every ``B`` (`teeny_ir.backend.plan.load_plan`),
`teeny_ir.backend.plan.check_layout` for a run's at its batch. This module is
the one planner, used by ``emit-triton``, ``plan-memory`` and the runtime's
backends. Only the standard library and teeny_ir's own modules are imported.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from teeny_ir.core.expressions import BinOp, ExpressionError, Num, Sym, parse
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.families import FAMILIES

if TYPE_CHECKING:
    from teeny_ir.backend.plan import Plan, TensorSpec

ALIGNMENT = 256
"""Every buffer offset is a multiple of this many bytes, for every batch size."""
STRATEGIES = ("size", "size-lifetime", "search", "naive")
"""The placements a plan records (its ``memory``): greedy by size, by size x
lifetime, a local search over the greedy order (`search`), one after another;
``best`` is the search, which starts from the better greedy order and keeps
only orders no larger, so it is never worse than either greedy order."""
CHOICES = ("best", *STRATEGIES)
BYTES = {"f32": 4, "i64": 8}


class MemoryPlanError(ValueError):
    """A buffer or an expression the memory plan cannot handle (not affine in ``B``)."""


@dataclass(frozen=True, order=True)
class Affine:
    """``per_batch * B + constant`` (bytes or an offset)."""

    per_batch: int
    constant: int

    def at(self, batch: int) -> int:
        return self.per_batch * batch + self.constant

    def __add__(self, other: Affine) -> Affine:
        return Affine(self.per_batch + other.per_batch, self.constant + other.constant)

    def text(self) -> str:
        """The canonical expression text: ``B * 123 + 45``, ``B * 123``, ``45``."""
        if not self.per_batch:
            return str(self.constant)
        head = f"{BATCH} * {self.per_batch}"
        return head if not self.constant else f"{head} + {self.constant}"


def affine(text: str) -> Affine:
    """Read an expression that is affine in ``B`` by its syntax: integers, ``B``,
    ``+``, ``-`` and products with a constant side (no call: ``max(B, 3)`` agrees
    with a line at a few points and leaves it elsewhere). Raises MemoryPlanError."""
    try:
        tree = parse(text)
    except ExpressionError as err:
        raise MemoryPlanError(f"'{text}': {err}") from None

    def walk(node: object) -> Affine:
        if isinstance(node, Num):
            return Affine(0, node.value)
        if isinstance(node, Sym) and node.name == BATCH:
            return Affine(1, 0)
        if isinstance(node, BinOp):
            lhs, rhs = walk(node.lhs), walk(node.rhs)
            if node.op == "+":
                return lhs + rhs
            if node.op == "-":
                return Affine(lhs.per_batch - rhs.per_batch, lhs.constant - rhs.constant)
            if not lhs.per_batch:
                return Affine(lhs.constant * rhs.per_batch, lhs.constant * rhs.constant)
            if not rhs.per_batch:
                return Affine(rhs.constant * lhs.per_batch, rhs.constant * lhs.constant)
        raise MemoryPlanError(f"'{text}' is not affine in {BATCH} (integers, B, +, - and *)")

    return walk(tree)


def buffer_bytes(spec: TensorSpec) -> Affine:
    """A buffer's bytes: its shape is ``B x static`` or static (any entry affine
    in ``B``, at most one using it)."""
    size = Affine(0, BYTES[spec.dtype])
    for dim in spec.shape:
        factor = Affine(0, dim) if isinstance(dim, int) else affine(dim)
        if factor.per_batch and size.per_batch:
            raise MemoryPlanError(
                f"buffer '{spec.name}' {list(spec.shape)} is not affine in {BATCH}"
            )
        size = Affine(
            size.per_batch * factor.constant + size.constant * factor.per_batch,
            size.constant * factor.constant,
        )
    return size


def _round(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


# --- liveness ------------------------------------------------------------------


def status_buffers(plan: Plan) -> set[str]:
    """Tensors the runtime reads after the run: families' status outputs."""
    families = {k.name: FAMILIES[k.family] for k in plan.kernels if k.family in FAMILIES}
    found: set[str] = set()
    from teeny_ir.backend.plan import CollectiveSpec  # plan.py imports this module

    for launch in plan.launches:
        if isinstance(launch, CollectiveSpec):
            continue  # no family, no status output
        family = families.get(launch.kernel)
        if family is None:
            continue
        for abi, arg in zip(family.args, launch.args, strict=False):
            if abi.name in family.status_checks and arg.tensor is not None:
                found.add(arg.tensor)
    return found


def intervals(plan: Plan) -> dict[str, tuple[int, int]]:
    """Buffer name -> (first, last) launch index it is live across, inclusive;
    outputs and status outputs to the last launch (they are read after the run).
    A buffer no launch touches is live across every launch."""
    bases = {view.name: view.base for view in plan.views}
    buffers = {spec.name for spec in plan.buffers}
    end = max(len(plan.launches) - 1, 0)
    touched: dict[str, list[int]] = {}
    for index, launch in enumerate(plan.launches):
        for arg in launch.args:
            if arg.tensor is None:
                continue
            name = bases.get(arg.tensor, arg.tensor)
            if name in buffers:
                touched.setdefault(name, []).append(index)
    kept = {bases.get(name, name) for name in (*plan.outputs, *status_buffers(plan))}
    live: dict[str, tuple[int, int]] = {}
    for spec in plan.buffers:
        uses = touched.get(spec.name)
        if not uses:
            live[spec.name] = (0, end)
        else:
            live[spec.name] = (min(uses), end if spec.name in kept else max(uses))
    return live


# --- placement -----------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One thing to place: ``size`` bytes live across launches ``first..last``."""

    name: str
    size: int
    first: int
    last: int

    def meets(self, other: Block) -> bool:
        return self.first <= other.last and other.first <= self.last


def greedy(blocks: Sequence[Block], strategy: str) -> tuple[dict[str, int], int]:
    """Place ``blocks`` (sizes already aligned) by ``strategy`` (one of
    `STRATEGIES`); returns (name -> offset, arena size). Ties go to the earlier
    block, then to the order given, so the result is deterministic."""
    if strategy == "naive":
        offsets, position = {}, 0
        for block in blocks:
            offsets[block.name] = position
            position += block.size
        return offsets, position
    if strategy == "search":
        return search(blocks)
    if strategy not in STRATEGIES:
        raise MemoryPlanError(f"unknown memory strategy '{strategy}' (known: {', '.join(CHOICES)})")
    return first_fit([blocks[i] for i in _order(blocks, strategy)])


@functools.lru_cache(maxsize=32)
def _greedy_cached(blocks: tuple[Block, ...], strategy: str) -> tuple[dict[str, int], int]:
    """`greedy`, remembered: emission places the same buffers twice (the schema
    check's draft plan, then the plan it writes). Callers must not mutate the
    offsets returned."""
    return greedy(blocks, strategy)


def _order(blocks: Sequence[Block], strategy: str) -> list[int]:
    """Largest first (``size``) or largest size x lifetime first (``size-lifetime``)."""
    return sorted(
        range(len(blocks)),
        key=lambda i: (
            -blocks[i].size * (blocks[i].last - blocks[i].first + 1 if strategy != "size" else 1),
            -blocks[i].size,
            blocks[i].first,
            i,
        ),
    )


def first_fit(order: Sequence[Block]) -> tuple[dict[str, int], int]:
    """Place the blocks in this order, each into the lowest gap that no placed
    block with an intersecting lifetime uses. The placed blocks are kept sorted
    by offset, so finding the gap is one scan that skips the blocks whose
    lifetimes miss this one's."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last), sorted
    offsets: dict[str, int] = {}
    arena = 0
    for block in order:
        first, last, size = block.first, block.last, block.size
        position = 0
        for start, stop, since, until in placed:
            if since > last or until < first:
                continue
            if start - position >= size:
                break  # the lowest gap that fits
            if stop > position:
                position = stop
        offsets[block.name] = position
        bisect.insort(placed, (position, position + size, first, last))
        if position + size > arena:
            arena = position + size
    return offsets, arena


SEARCH_WORK = 4_000_000
"""The search's budget: about this many block pairs compared (iterations x n^2)."""


def search(blocks: Sequence[Block]) -> tuple[dict[str, int], int]:
    """The better of the two greedy orders, improved by a local search over the
    order: swap two blocks (a seeded generator, so the result is deterministic),
    keep the order when the first-fit arena is no larger; stop at the live-bytes
    bound (no placement beats it) or when the budget is spent."""
    import random

    if not blocks:
        return {}, 0
    bound = _peak(blocks)
    order = [blocks[i] for i in _order(blocks, "size")]
    offsets, arena = first_fit(order)
    if arena > bound:  # at the bound the other order cannot be smaller
        other = [blocks[i] for i in _order(blocks, "size-lifetime")]
        other_offsets, other_arena = first_fit(other)
        if other_arena < arena:
            order, offsets, arena = other, other_offsets, other_arena
    rng = random.Random(0)
    for _ in range(min(2000, SEARCH_WORK // len(blocks) ** 2)):
        if arena <= bound or len(order) < 2:
            break
        i, j = rng.sample(range(len(order)), 2)
        trial = order[:]
        trial[i], trial[j] = trial[j], trial[i]
        trial_offsets, trial_arena = first_fit(trial)
        if trial_arena <= arena:
            order, offsets, arena = trial, trial_offsets, trial_arena
    return offsets, arena


def _peak(blocks: Sequence[Block]) -> int:
    """The most bytes of blocks live across one launch."""
    events: dict[int, int] = {}
    for block in blocks:
        events[block.first] = events.get(block.first, 0) + block.size
        events[block.last + 1] = events.get(block.last + 1, 0) - block.size
    peak = total = 0
    for moment in sorted(events):
        total += events[moment]
        peak = max(peak, total)
    return peak


@dataclass(frozen=True)
class Placement:
    """Every buffer's offset and the arena's size, expressions of ``B``."""

    strategy: str
    offsets: Mapping[str, Affine]
    arena: Affine


def place(plan: Plan, strategy: str = "best") -> Placement:
    """The placement of ``plan``'s buffers by ``strategy`` (one of `CHOICES`)."""
    if strategy not in CHOICES:
        raise MemoryPlanError(f"unknown memory strategy '{strategy}' (known: {', '.join(CHOICES)})")
    if strategy == "best":
        # The search starts from the better of the two greedy orders and keeps
        # only orders no larger: it is never worse than either of them.
        return place(plan, "search")
    live = intervals(plan)
    scaled: list[Block] = []
    static: list[Block] = []
    for spec in plan.buffers:
        size = buffer_bytes(spec)
        first, last = live[spec.name]
        if size.per_batch:  # B * a + c <= B * (a + c) for every B >= 1
            scaled.append(Block(spec.name, _round(size.per_batch + size.constant), first, last))
        else:
            static.append(Block(spec.name, _round(size.constant), first, last))
    per_image, region = _greedy_cached(tuple(scaled), strategy)
    fixed, rest = _greedy_cached(tuple(static), strategy)
    offsets = {name: Affine(offset, 0) for name, offset in per_image.items()}
    offsets |= {name: Affine(region, offset) for name, offset in fixed.items()}
    ordered = {spec.name: offsets[spec.name] for spec in plan.buffers}
    return Placement(strategy, ordered, Affine(region, rest))


def with_memory(plan: Plan, strategy: str = "best") -> Plan:
    """``plan`` with its buffers placed: each buffer's ``offset``, the ``arena``
    and the ``memory`` strategy that placed them."""
    placement = place(plan, strategy)
    buffers = tuple(
        dataclasses.replace(spec, offset=placement.offsets[spec.name].text())
        for spec in plan.buffers
    )
    return dataclasses.replace(
        plan, buffers=buffers, arena=placement.arena.text(), memory=placement.strategy
    )


# --- one batch size: the joint placement ----------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where a run at one batch size puts every buffer: byte offsets in an
    arena of ``arena`` bytes. ``joint``: placed by `layout` for this batch
    (per-image and static buffers together); otherwise the plan's own
    B-affine offsets evaluated at it."""

    batch: int
    offsets: Mapping[str, int]
    arena: int
    joint: bool


_LAYOUTS: dict[tuple[object, ...], Layout] = {}
"""`layout`'s results by everything they depend on (a run calls it per launch
set-up, the interpreter worker per run)."""
_LAYOUTS_KEPT = 16


def layout(plan: Plan, batch: int) -> Layout:
    """The placement a run of ``plan`` at ``batch`` uses: the plan's strategy
    (its ``memory``) run on every buffer at its size at this batch, per-image
    and static buffers together, so one can take the other's gaps; the plan's
    own B-affine placement where that is no larger (always for ``naive``,
    whose point is no reuse). Deterministic (`search` is seeded), so the
    interpreter worker, the cuda session and `memory(batch)` agree. Every
    layout returned has passed the plan's proof at this batch
    (`teeny_ir.backend.plan.check_layout`, a plain interval check), as every
    plan emit-triton writes has passed the loader's. Raises MemoryPlanError
    for a batch below 1, PlanError when the proof fails."""
    from teeny_ir.backend.plan import check_layout  # plan.py imports this module

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise MemoryPlanError(f"the batch size must be an integer >= 1, got {batch!r}")
    live = intervals(plan)
    key = (plan.memory, plan.arena, batch, plan.buffers, tuple(live.values()))
    found = _LAYOUTS.get(key)
    if found is not None:
        return found
    own = Layout(
        batch,
        MappingProxyType({spec.name: affine(spec.offset).at(batch) for spec in plan.buffers}),
        arena_bytes(plan, batch),
        joint=False,
    )
    chosen = own
    if plan.memory != "naive":
        blocks = tuple(
            Block(spec.name, _round(buffer_bytes(spec).at(batch)), *live[spec.name])
            for spec in plan.buffers
        )
        offsets, arena = _greedy_cached(blocks, plan.memory)
        if arena < own.arena:
            ordered = {spec.name: offsets[spec.name] for spec in plan.buffers}
            chosen = Layout(batch, MappingProxyType(ordered), arena, joint=True)
    check_layout(plan, chosen)
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        del _LAYOUTS[next(iter(_LAYOUTS))]
    _LAYOUTS[key] = chosen
    return chosen


# --- figures -------------------------------------------------------------------


def naive_bytes(plan: Plan, batch: int) -> int:
    """The bytes of every buffer, one after another (one allocation each)."""
    return sum(buffer_bytes(spec).at(batch) for spec in plan.buffers)


def lower_bound_bytes(plan: Plan, batch: int) -> int:
    """No placement beats this: the most bytes of buffers live across one launch."""
    live = intervals(plan)
    sizes = {spec.name: buffer_bytes(spec).at(batch) for spec in plan.buffers}
    total = [0] * max(len(plan.launches), 1)
    for name, (first, last) in live.items():
        for index in range(first, last + 1):
            total[index] += sizes[name]
    return max(total)


def arena_bytes(plan: Plan, batch: int) -> int:
    """The arena's size at ``batch`` (the plan's ``arena`` expression)."""
    return affine(plan.arena).at(batch)


def overlapping_pairs(
    live: Mapping[str, tuple[int, int]],
) -> Iterable[tuple[str, str, int]]:
    """Every pair of buffers whose live intervals intersect, with the first
    launch where both are live (a sweep in order of first launch)."""
    order = sorted(live, key=lambda name: live[name])
    active: list[str] = []
    for name in order:
        first, _ = live[name]
        active = [other for other in active if live[other][1] >= first]
        for other in active:
            yield other, name, first
        active.append(name)
