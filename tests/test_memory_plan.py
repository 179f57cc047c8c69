"""The memory plan (`teeny_ir.backend.memory`): liveness, greedy placement in one
arena, its expressions of ``B``, the loader's proof, a run's joint layout at its
batch and its proof, ``memory(batch)``, and runs through the interpreter that
match one-buffer-each plans bit for bit."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend import memory
from teeny_ir.backend.memory import ALIGNMENT, Affine, Block, greedy
from teeny_ir.backend.plan import (
    Arg,
    KernelSpec,
    LaunchSpec,
    Plan,
    PlanError,
    TensorSpec,
    check_layout,
    load_plan,
)
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
K = ALIGNMENT

# --- the planner as pure functions ---------------------------------------------


def _no_overlap(blocks: list[Block], offsets: dict[str, int]) -> bool:
    for i, one in enumerate(blocks):
        for other in blocks[i + 1 :]:
            if one.meets(other):
                a, b = offsets[one.name], offsets[other.name]
                if a < b + other.size and b < a + one.size:
                    return False
    return True


def _peak(blocks: list[Block]) -> int:
    last = max(b.last for b in blocks)
    return max(sum(b.size for b in blocks if b.first <= t <= b.last) for t in range(last + 1))


CHAIN = [  # a chain of convolutions: each buffer live from its writer to its reader
    Block("a", 4 * K, 0, 1),
    Block("b", 2 * K, 1, 2),
    Block("c", 4 * K, 2, 3),
    Block("d", 2 * K, 3, 4),
]
RESIDUAL = [  # a skip connection keeps "x" live across the block
    Block("x", 2 * K, 0, 3),
    Block("y", 3 * K, 1, 2),
    Block("z", 3 * K, 2, 3),
    Block("w", 1 * K, 3, 4),
    Block("v", 2 * K, 4, 5),
]


@pytest.mark.parametrize("strategy", ["size", "size-lifetime"])
@pytest.mark.parametrize(("blocks", "optimum"), [(CHAIN, 6 * K), (RESIDUAL, 8 * K)])
def test_greedy_reaches_the_known_optimum(strategy: str, blocks: list[Block], optimum: int) -> None:
    offsets, arena = greedy(blocks, strategy)
    assert _peak(blocks) == optimum  # the live-bytes bound, reached
    assert arena == optimum
    assert _no_overlap(blocks, offsets)


def test_greedy_by_size_puts_the_largest_first_at_zero() -> None:
    offsets, _ = greedy(CHAIN, "size")
    assert offsets["a"] == 0 and offsets["c"] == 0  # disjoint lifetimes share bytes
    assert offsets["b"] == 4 * K and offsets["d"] == 4 * K


def test_the_two_greedy_orders_differ_and_best_keeps_the_smaller() -> None:
    # size first puts the big short-lived "s" at 0, so the long-lived "l"
    # must go above it; size x lifetime places "l" first and "s" reuses
    # the bytes below the short "t".
    blocks = [
        Block("s", 4 * K, 0, 0),
        Block("l", 3 * K, 0, 9),
        Block("t", 2 * K, 1, 1),
        Block("u", 4 * K, 2, 9),
    ]
    _, by_size = greedy(blocks, "size")
    _, by_area = greedy(blocks, "size-lifetime")
    assert by_size == by_area or min(by_size, by_area) >= _peak(blocks)
    for strategy in ("size", "size-lifetime"):
        offsets, _ = greedy(blocks, strategy)
        assert _no_overlap(blocks, offsets)


def test_random_interval_sets_never_overlap_and_stay_near_the_bound() -> None:
    rng = random.Random(7)
    for _ in range(200):
        blocks = []
        for i in range(rng.randint(1, 12)):
            first = rng.randint(0, 10)
            blocks.append(Block(f"b{i}", rng.randint(1, 8) * K, first, first + rng.randint(0, 4)))
        for strategy in ("size", "size-lifetime", "naive"):
            offsets, arena = greedy(blocks, strategy)
            assert _no_overlap(blocks, offsets)
            assert _peak(blocks) <= arena <= sum(b.size for b in blocks)
            assert all(offsets[b.name] + b.size <= arena for b in blocks)


def test_naive_is_one_after_another() -> None:
    offsets, arena = greedy(CHAIN, "naive")
    assert offsets == {"a": 0, "b": 4 * K, "c": 6 * K, "d": 10 * K}
    assert arena == 12 * K


def test_affine_expressions() -> None:
    assert memory.affine("B * 512 + 256") == Affine(512, 256)
    assert memory.affine("(B + 1) * 4 - B") == Affine(3, 4)
    assert Affine(512, 0).text() == "B * 512" and Affine(0, 0).text() == "0"
    assert memory.affine(Affine(7, 9).text()) == Affine(7, 9)
    for text in ("max(B, 3)", "B * B", "C"):
        with pytest.raises(memory.MemoryPlanError):
            memory.affine(text)


def _random_plan(seed: int) -> Plan:
    """Buffers B x static and static, f32 and i64, touched by random launches
    (a family the planner does not know: no status outputs)."""
    rng = random.Random(seed)
    count = rng.randint(2, 14)
    buffers = tuple(
        TensorSpec(
            f"t{i}",
            ("B", rng.randint(1, 300)) if rng.random() < 0.7 else (rng.randint(1, 300),),
            rng.choice(("f32", "i64")),
        )
        for i in range(count)
    )
    launches = tuple(
        LaunchSpec(
            "k",
            ("1", "1", "1"),
            1,
            1,
            tuple(Arg(tensor=f"t{rng.randrange(count)}") for _ in range(rng.randint(1, 3))),
        )
        for _ in range(rng.randint(1, 10))
    )
    kernel = KernelSpec("k", "none", "k.py", {}, "0" * 64)
    return Plan("forward", (), (), (), buffers, (kernel,), launches, (f"t{count - 1}",))


@pytest.mark.parametrize("strategy", memory.CHOICES)
def test_b_affine_offsets_hold_for_b_1_to_5_by_brute_force(strategy: str) -> None:
    for seed in range(60):
        plan = memory.with_memory(_random_plan(seed), strategy)
        live = memory.intervals(plan)
        for batch in range(1, 6):
            arena = memory.arena_bytes(plan, batch)
            spans = {}
            for spec in plan.buffers:
                start = memory.affine(spec.offset).at(batch)
                assert start % ALIGNMENT == 0
                spans[spec.name] = (start, start + memory.buffer_bytes(spec).at(batch))
                assert spans[spec.name][1] <= arena
            for one, other, _ in memory.overlapping_pairs(live):
                (a, b), (c, d) = spans[one], spans[other]
                assert b <= c or d <= a, (seed, batch, one, other)
            assert memory.lower_bound_bytes(plan, batch) <= arena
            assert memory.naive_bytes(plan, batch) <= memory.arena_bytes(
                memory.with_memory(plan, "naive"), batch
            )


# --- a run's layout at its batch ---------------------------------------------


@st.composite
def _plans(draw: st.DrawFn) -> Plan:
    """A plan of B x static and static buffers (f32, i64) over random launches:
    random sizes and, through the launches that touch them, random lifetimes."""
    count = draw(st.integers(1, 16))
    buffers = tuple(
        TensorSpec(
            f"t{i}",
            ("B", draw(st.integers(1, 700)))
            if draw(st.booleans())
            else (draw(st.integers(1, 900)),),
            draw(st.sampled_from(("f32", "i64"))),
        )
        for i in range(count)
    )
    touches = st.lists(st.integers(0, count - 1), min_size=1, max_size=4)
    launches = tuple(
        LaunchSpec("k", ("1", "1", "1"), 1, 1, tuple(Arg(tensor=f"t{i}") for i in draw(touches)))
        for _ in range(draw(st.integers(1, 12)))
    )
    outputs = tuple(
        f"t{i}" for i in sorted(set(draw(st.lists(st.integers(0, count - 1), max_size=3))))
    )
    kernel = KernelSpec("k", "none", "k.py", {}, "0" * 64)
    return Plan("forward", (), (), (), buffers, (kernel,), launches, outputs or ("t0",))


def _live_spans_are_disjoint(plan: Plan, layout: memory.Layout) -> None:
    """Brute force, per launch: the buffers live across it have disjoint bytes."""
    live = memory.intervals(plan)
    spans = {
        spec.name: (
            layout.offsets[spec.name],
            layout.offsets[spec.name] + memory.buffer_bytes(spec).at(layout.batch),
        )
        for spec in plan.buffers
    }
    for launch in range(len(plan.launches)):
        here = sorted(spans[n] for n, (first, last) in live.items() if first <= launch <= last)
        for (_, end), (start, _) in itertools.pairwise(here):
            assert end <= start, (launch, here)


@settings(max_examples=300, deadline=None)
@given(_plans(), st.sampled_from(memory.CHOICES), st.integers(1, 64))
def test_a_runs_layout_never_overlaps_and_never_exceeds_the_plans_arena(
    plan: Plan, strategy: str, batch: int
) -> None:
    placed = memory.with_memory(plan, strategy)
    layout = memory.layout(placed, batch)
    assert layout.batch == batch and list(layout.offsets) == [b.name for b in plan.buffers]
    assert all(offset % ALIGNMENT == 0 and offset >= 0 for offset in layout.offsets.values())
    for spec in plan.buffers:
        assert layout.offsets[spec.name] + memory.buffer_bytes(spec).at(batch) <= layout.arena
    _live_spans_are_disjoint(placed, layout)
    own = memory.arena_bytes(placed, batch)
    assert memory.lower_bound_bytes(placed, batch) <= layout.arena <= own
    assert layout.joint == (layout.arena < own)
    if placed.memory == "naive":  # no reuse asked for: the plan's own offsets
        assert not layout.joint
    check_layout(placed, layout)


def test_the_joint_layout_takes_the_gaps_of_the_other_region() -> None:
    # "act" (per image) is dead once "grad" (static) is written: jointly, "grad"
    # reuses act's bytes; the B-affine placement puts it after the per-image region.
    buffers = (TensorSpec("act", ("B", 256)), TensorSpec("grad", (256,)))
    launches = (
        LaunchSpec("k", ("1", "1", "1"), 1, 1, (Arg(tensor="act"),)),
        LaunchSpec("k", ("1", "1", "1"), 1, 1, (Arg(tensor="grad"),)),
    )
    kernel = KernelSpec("k", "none", "k.py", {}, "0" * 64)
    plan = memory.with_memory(
        Plan("forward", (), (), (), buffers, (kernel,), launches, ("grad",)), "best"
    )
    assert plan.arena == "B * 1024 + 1024"
    for batch in (1, 4):
        layout = memory.layout(plan, batch)
        assert layout.joint and layout.offsets == {"act": 0, "grad": 0}
        assert layout.arena == 1024 * batch == memory.lower_bound_bytes(plan, batch)


def test_check_layout_refuses_bad_layouts(lenet_training: Path) -> None:
    plan = load_plan(lenet_training)
    layout = memory.layout(plan, 2)
    check_layout(plan, layout)
    live = memory.intervals(plan)
    one, other, index = next(iter(memory.overlapping_pairs(live)))

    def edited(**offsets: int) -> memory.Layout:
        return dataclasses.replace(layout, offsets=MappingProxyType({**layout.offsets, **offsets}))

    with pytest.raises(PlanError) as info:
        check_layout(plan, edited(**{other: layout.offsets[one]}))
    message = str(info.value)
    assert f"'{one}'" in message and f"'{other}'" in message and "at B=2" in message
    assert f"live at launch {index} ('" in message
    with pytest.raises(PlanError, match="not a multiple of 256"):
        check_layout(plan, edited(**{one: layout.offsets[one] + 4}))
    with pytest.raises(PlanError, match="inside the arena"):
        check_layout(plan, dataclasses.replace(layout, arena=layout.arena - ALIGNMENT))
    with pytest.raises(PlanError, match="places"):
        check_layout(plan, dataclasses.replace(layout, offsets=MappingProxyType({})))


# --- emitted plans -------------------------------------------------------------


def _lenet(out: Path, pipeline: str, *, training: bool = False) -> Path:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    if training:
        add_cross_entropy_loss(module)
    stderr = io.StringIO()
    code = opt.run(
        ["-", "-p", f"{pipeline},emit-triton{{out-dir={out}}}", "-o", "/dev/null"],
        io.BytesIO(teeny_ir.print_module(module).encode()),
        io.StringIO(),
        stderr,
    )
    assert code == 0, stderr.getvalue()
    return out


TRAINING = "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter}"


@pytest.fixture(scope="module")
def lenet_training(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _lenet(tmp_path_factory.mktemp("memory") / "training", TRAINING, training=True)


@pytest.fixture(scope="module")
def lenet_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("memory")
    inference = "teeny-inference"
    return {
        "planned": _lenet(root / "planned", inference),
        "naive": _emit_naive(root / "naive", inference),
    }


def _emit_naive(out: Path, pipeline: str, *, training: bool = False) -> Path:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    if training:
        add_cross_entropy_loss(module)
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out} memory=naive}}").run(module)
    return out


def test_lenet_memory_figures(lenet_plans: dict[str, Path]) -> None:
    planned = runtime.load(lenet_plans["planned"])
    naive = runtime.load(lenet_plans["naive"])
    # conv1 6x28x28, pool 6x14x14, conv2 16x10x10, pool 16x5x5, fc 120, 84, 10
    every = (6 * 28 * 28 + 6 * 14 * 14 + 16 * 10 * 10 + 16 * 5 * 5 + 120 + 84 + 10) * 4
    peak = (6 * 28 * 28 + 6 * 14 * 14) * 4  # conv1's output and the pool reading it
    for batch in (1, 16):
        figures = planned.memory(batch)
        assert set(figures) == {
            "arena_bytes",
            "plan_arena_bytes",
            "lower_bound_bytes",
            "naive_bytes",
        }
        assert figures["naive_bytes"] == every * batch
        assert figures["lower_bound_bytes"] == peak * batch
        assert peak * batch <= figures["arena_bytes"] <= 1.05 * peak * batch
        assert figures["arena_bytes"] <= figures["plan_arena_bytes"]
        assert figures["plan_arena_bytes"] == memory.arena_bytes(planned.plan, batch)
        assert naive.memory(batch)["arena_bytes"] >= every * batch
    assert planned.plan.memory == "search" and naive.plan.memory == "naive"  # best: the search
    with pytest.raises(runtime.RuntimeInputError):
        planned.memory(0)


@pytest.mark.parametrize("batch", [1, 16])
def test_lenet_training_runs_at_the_live_bytes_bound(lenet_training: Path, batch: int) -> None:
    executable = runtime.load(lenet_training)
    figures = executable.memory(batch)
    # the B-affine placement cannot put the static gradients and momenta in the
    # per-image region's gaps; the run's layout at this batch can
    assert figures["plan_arena_bytes"] > 1.05 * figures["lower_bound_bytes"]
    assert figures["lower_bound_bytes"] <= figures["arena_bytes"]
    assert figures["arena_bytes"] <= 1.05 * figures["lower_bound_bytes"]
    assert memory.layout(executable.plan, batch).joint


def test_the_lower_bound_of_a_training_plan_is_the_live_bytes_peak(lenet_training: Path) -> None:
    """Recomputed from the launches alone: a buffer is live from the first launch
    that names it (or a view of it) to the last, an output to the end."""
    plan = load_plan(lenet_training)
    bases = {view.name: view.base for view in plan.views}
    named: dict[str, list[int]] = {}
    for index, launch in enumerate(plan.launches):
        for arg in launch.args:
            if arg.tensor is not None:
                named.setdefault(bases.get(arg.tensor, arg.tensor), []).append(index)
    kept = {bases.get(name, name) for name in plan.outputs} | {
        spec.name
        for spec in plan.buffers
        if spec.dtype == "i64"  # status outputs
    }
    end = len(plan.launches) - 1
    for batch in (1, 16):
        live_bytes = [0] * len(plan.launches)
        for spec in plan.buffers:
            uses = named[spec.name]
            for index in range(min(uses), end + 1 if spec.name in kept else max(uses) + 1):
                live_bytes[index] += memory.buffer_bytes(spec).at(batch)
        assert memory.lower_bound_bytes(plan, batch) == max(live_bytes)
        # the gradients and momenta are live from their first write to the end
        grads = [n for n, (role, _) in zip(plan.outputs, plan.roles, strict=True) if role]
        assert grads and all(memory.intervals(plan)[bases.get(g, g)][1] == end for g in grads)


def test_plans_and_layouts_are_the_same_in_every_run(lenet_training: Path, tmp_path: Path) -> None:
    again = _lenet(tmp_path / "again", TRAINING, training=True)
    assert (again / "plan.json").read_bytes() == (lenet_training / "plan.json").read_bytes()
    # the layout in other processes (another hash seed): the interpreter worker
    # and the cuda session compute the layout `memory(batch)` reports
    script = (
        "import json, sys; from teeny_ir.backend import memory; "
        "from teeny_ir.backend.plan import load_plan; "
        "plan = load_plan(sys.argv[1]); "
        "print(json.dumps([[memory.layout(plan, b).arena, dict(memory.layout(plan, b).offsets)] "
        "for b in (1, 16)]))"
    )
    plan = load_plan(lenet_training)
    here = [[memory.layout(plan, b).arena, dict(memory.layout(plan, b).offsets)] for b in (1, 16)]
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", script, str(again)],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ | {"PYTHONHASHSEED": seed},
        )
        assert json.loads(result.stdout) == here


def _tamper(source: Path, target: Path, edit: object) -> Path:
    import shutil

    shutil.copytree(source, target)
    data = json.loads((target / "plan.json").read_text())
    edit(data)  # type: ignore[operator]
    (target / "plan.json").write_text(json.dumps(data))
    return target


def test_loader_refuses_overlapping_live_buffers(
    lenet_plans: dict[str, Path], tmp_path: Path
) -> None:
    plan = load_plan(lenet_plans["planned"])
    live = memory.intervals(plan)
    # t0 (conv1) is read by launch 1, which writes t1: both live there.
    assert live["t0"][1] >= live["t1"][0]

    def overlap(data: dict[str, object]) -> None:
        buffers = data["buffers"]
        assert isinstance(buffers, list)
        buffers[1]["offset"] = buffers[0]["offset"]

    bad = _tamper(lenet_plans["planned"], tmp_path / "overlap", overlap)
    with pytest.raises(PlanError) as info:
        load_plan(bad)
    message = str(info.value)
    assert "'t0'" in message and "'t1'" in message and "overlap in the arena" in message
    assert f"live at launch {live['t1'][0]} ('" in message


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["buffers"][1].update(offset="B * 18944 + 4"), "not a multiple of 256"),
        (lambda d: d.update(arena="B * 256"), "inside the arena"),
        (lambda d: d["buffers"][0].update(offset="max(B, 2)"), "not affine"),
        (lambda d: d["buffers"][0].pop("offset"), "schema at buffers/0"),
        (lambda d: d.update(memory="clever"), "schema at memory"),
    ],
    ids=["misaligned", "outside", "not affine", "no offset", "strategy"],
)
def test_loader_refuses_other_bad_memory_plans(
    lenet_plans: dict[str, Path], tmp_path: Path, edit: object, message: str
) -> None:
    with pytest.raises(PlanError, match=message):
        load_plan(_tamper(lenet_plans["planned"], tmp_path / "bad", edit))


def test_worker_reuses_one_arena_per_batch(lenet_plans: dict[str, Path]) -> None:
    from teeny_ir.runtime.backends.interpreter_worker import _Loaded

    loaded = object.__new__(_Loaded)  # no kernels imported: only the allocation
    loaded.plan = load_plan(lenet_plans["planned"])
    loaded.arena = None
    first = loaded.buffers(2)
    again = loaded.buffers(2)
    assert all(first[n].data_ptr() == again[n].data_ptr() for n in first)
    assert loaded.arena is not None
    layout = memory.layout(loaded.plan, 2)
    assert loaded.arena[1].numel() == layout.arena
    base = loaded.arena[1].data_ptr()
    assert all(first[n].data_ptr() == base + layout.offsets[n] for n in first)
    assert first["t0"].data_ptr() == first["t2"].data_ptr()  # reused bytes
    other = loaded.buffers(3)
    assert other["t0"].shape[0] == 3 and loaded.arena is not None and loaded.arena[0] == 3


# --- end to end through the interpreter ------------------------------------------


@pytest.mark.slow
def test_lenet_inference_matches_naive_bit_for_bit(lenet_plans: dict[str, Path]) -> None:
    weights = load_file(ROOT / "examples" / "lenet" / "lenet.safetensors")
    rng = np.random.default_rng(3)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
        got = runtime.load(lenet_plans["planned"]).run([x], weights)
        want = runtime.load(lenet_plans["naive"]).run([x], weights)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.tobytes() == w.tobytes()
            assert np.isfinite(g).all()


@pytest.mark.slow
def test_lenet_trainer_steps_match_naive_bit_for_bit(tmp_path: Path) -> None:
    pipeline = "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 profile=interpreter}"
    planned = _lenet(tmp_path / "planned", pipeline, training=True)
    naive = _emit_naive(tmp_path / "naive", pipeline, training=True)
    assert (
        runtime.load(planned).memory(2)["arena_bytes"]
        < runtime.load(naive).memory(2)["arena_bytes"]
    )
    assert memory.layout(load_plan(planned), 2).joint  # the run below uses the joint layout
    weights = load_file(ROOT / "examples" / "lenet" / "lenet.safetensors")
    rng = np.random.default_rng(5)
    batches = [
        (
            rng.standard_normal((2, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 2).astype(np.int64),
        )
        for _ in range(2)
    ]
    results = []
    for directory in (planned, naive):
        trainer = runtime.load(directory).trainer(weights)
        try:  # two steps: the second reuses the first step's arena
            steps = [trainer.step(list(batch)) for batch in batches]
            state = trainer.state_dict()
        finally:
            trainer.close()
        results.append((steps, state))
    (got_steps, got_state), (want_steps, want_state) = results
    for got, want in zip(got_steps, want_steps, strict=True):
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    assert got_state.keys() == want_state.keys()
    for name in got_state:
        assert np.asarray(got_state[name]).tobytes() == np.asarray(want_state[name]).tobytes()
