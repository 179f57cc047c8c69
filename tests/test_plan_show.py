"""Plan pictures (`teeny_ir.backend.show`, ``teeny-plan``): the data they plot
(`touches`, `occupancy`) checked against the plan and the memory plan, the SVG
they write (one marker group per launch, one rectangle per buffer, the same
bytes every run, the committed docs images up to date) and the error lines."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend import memory, show
from teeny_ir.backend.plan import Arg, KernelSpec, LaunchSpec, Plan, TensorSpec, load_plan
from teeny_ir.frontend.losses import add_cross_entropy_loss
from teeny_ir.kernels.families import FAMILIES

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
YOLO = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
IMAGES = ROOT / "docs" / "images"
TRAINING = "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter}"
SVG = "{http://www.w3.org/2000/svg}"
REGENERATE = (
    ".venv/bin/teeny-opt examples/yolov8n/yolov8n.mlir "
    "-p 'teeny-inference,emit-triton{out-dir=/tmp/yolov8n}' -o /dev/null && "
    ".venv/bin/teeny-plan /tmp/yolov8n --picture launches -o docs/images/yolov8n-plan.svg && "
    ".venv/bin/teeny-plan /tmp/yolov8n --picture arena -o docs/images/yolov8n-arena.svg"
)
STATIC = """\
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = graph.silu %x : tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def _emit(out: Path, module: ModuleOp, pipeline: str) -> Path:
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out}}}").run(module)
    return out


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plans")
    training = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(training)
    inference = "teeny-inference"
    return {
        "lenet": _emit(root / "lenet", teeny_ir.parse_module(LENET.read_text()), inference),
        "training": _emit(root / "training", training, TRAINING),
        "yolov8n": _emit(root / "yolov8n", teeny_ir.parse_module(YOLO.read_text()), inference),
        "static": _emit(root / "static", teeny_ir.parse_module(STATIC), inference),
    }


def _run(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = show.run(list(argv), stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


# --- the data ------------------------------------------------------------------


def test_lenet_touches_are_its_chain(plans: dict[str, Path]) -> None:
    """conv, pool, conv, pool, three linears: launch i writes t<i> and reads t<i-1>
    (the input and the parameters are not in the arena)."""
    touched = show.touches(load_plan(plans["lenet"]))
    assert touched[0] == {"t0": show.WRITE}
    for index in range(1, 7):
        assert touched[index] == {f"t{index - 1}": show.READ, f"t{index}": show.WRITE}


def _bases(plan: Plan) -> dict[str, str]:
    return {view.name: view.base for view in plan.views}


@pytest.mark.parametrize("name", ["lenet", "training", "yolov8n"])
def test_touches_agree_with_the_plans_liveness(plans: dict[str, Path], name: str) -> None:
    plan = load_plan(plans[name])
    touched = show.touches(plan)
    assert len(touched) == len(plan.launches)
    buffers = {spec.name for spec in plan.buffers}
    bases = _bases(plan)
    live = memory.intervals(plan)
    kept = {bases.get(n, n) for n in (*plan.outputs, *memory.status_buffers(plan))}
    uses: dict[str, list[int]] = {}
    for index, (launch, access) in enumerate(zip(plan.launches, touched, strict=True)):
        named = {bases.get(a.tensor, a.tensor) for a in launch.args if a.tensor is not None}
        assert set(access) == named & buffers
        for buffer in access:
            uses.setdefault(buffer, []).append(index)
    assert set(uses) == buffers
    for buffer, indices in uses.items():
        # the loader's proof: the first launch that touches a buffer writes it
        assert touched[indices[0]][buffer] in (show.WRITE, show.READ_WRITE), buffer
        assert live[buffer][0] == indices[0]
        if buffer not in kept:
            assert live[buffer][1] == indices[-1]
    order = show.first_use_order(plan, touched)
    assert sorted(order) == sorted(buffers)
    assert [min(uses[b]) for b in order] == sorted(min(uses[b]) for b in order)


def test_yolov8n_residuals_read_and_write_one_buffer(plans: dict[str, Path]) -> None:
    """A C2f bottleneck adds its input (a channel slice of the concat buffer) and
    writes the sum into another slice of it: the launch reads and writes the base."""
    plan = load_plan(plans["yolov8n"])
    touched = show.touches(plan)
    bases = _bases(plan)
    both = [
        index
        for index, launch in enumerate(plan.launches)
        if any(kind == show.READ_WRITE for kind in touched[index].values())
    ]
    assert both
    for index in both:
        launch = plan.launches[index]
        family = FAMILIES[next(k.family for k in plan.kernels if k.name == launch.kernel)]
        kinds: dict[str, set[str]] = {}
        for abi, arg in zip(family.args, launch.args, strict=True):
            if arg.tensor is not None:
                kinds.setdefault(bases.get(arg.tensor, arg.tensor), set()).add(abi.kind)
        for buffer, kind in touched[index].items():
            assert (kind == show.READ_WRITE) == ({"input", "output"} <= kinds[buffer])


def test_training_touches_follow_the_phases(plans: dict[str, Path]) -> None:
    """A gradient is written in the backward and read by the update; an updated
    weight or momentum is written by the update."""
    plan = load_plan(plans["training"])
    touched = show.touches(plan)
    bases = _bases(plan)
    phases: dict[str, dict[str, set[str]]] = {}
    for launch, access in zip(plan.launches, touched, strict=True):
        for buffer, kind in access.items():
            for part in kind.split("-"):
                phases.setdefault(buffer, {}).setdefault(part, set()).add(launch.phase)
    roles = {bases.get(n, n): plan.role(i)[0] for i, n in enumerate(plan.outputs)}
    assert set(roles.values()) == {"", "grad", "updated"}
    for buffer, role in roles.items():
        if role == "grad":
            assert phases[buffer]["write"] == {"backward"}
            assert "update" in phases[buffer]["read"]
        elif role == "updated":
            assert phases[buffer]["write"] == {"update"}


@pytest.mark.parametrize(
    ("name", "batch"),
    [
        ("lenet", 1),
        ("lenet", 16),
        ("training", 1),
        ("training", 16),
        ("yolov8n", 1),
        ("yolov8n", 3),
    ],
)
def test_occupancy_against_the_memory_figures(
    plans: dict[str, Path], name: str, batch: int
) -> None:
    executable = runtime.load(plans[name])
    plan = executable.plan
    figures = executable.memory(batch)
    occupied = show.occupancy(plan, batch)
    # live bytes, recomputed from the launches: a buffer is live from the first
    # launch that names it (or a view of it) to the last; outputs to the end
    bases = _bases(plan)
    named: dict[str, list[int]] = {}
    for index, launch in enumerate(plan.launches):
        for arg in launch.args:
            if arg.tensor is not None:
                named.setdefault(bases.get(arg.tensor, arg.tensor), []).append(index)
    kept = {bases.get(n, n) for n in (*plan.outputs, *memory.status_buffers(plan))}
    end = len(plan.launches) - 1
    live = [0] * len(plan.launches)
    for spec in plan.buffers:
        uses = named[spec.name]
        for index in range(min(uses), (end if spec.name in kept else max(uses)) + 1):
            live[index] += memory.buffer_bytes(spec).at(batch)
    assert occupied.live_bytes == tuple(live)
    assert max(occupied.live_bytes) == figures["lower_bound_bytes"] == occupied.lower_bound_bytes
    assert occupied.arena_bytes == figures["arena_bytes"]
    assert occupied.plan_arena_bytes == figures["plan_arena_bytes"]
    assert occupied.naive_bytes == figures["naive_bytes"]
    assert occupied.ratio == figures["arena_bytes"] / figures["lower_bound_bytes"]
    layout = memory.layout(plan, batch)
    assert occupied.joint == layout.joint
    assert {s.name: s.offset for s in occupied.spans} == dict(layout.offsets)
    _check_occupancy(occupied)


def _check_occupancy(occupied: show.Occupancy) -> None:
    """Each launch's top is at least its live bytes and at most the arena, the
    tops' maximum is the arena, and what the placement holds for two buffers
    live at one launch never shares a byte."""
    assert all(
        lower <= top <= occupied.arena_bytes
        for lower, top in zip(occupied.live_bytes, occupied.top, strict=True)
    )
    assert max(occupied.top, default=0) == occupied.arena_bytes
    for i, one in enumerate(occupied.spans):
        assert one.size <= one.reserved and one.reserved % memory.ALIGNMENT == 0
        for other in occupied.spans[i + 1 :]:
            if one.first <= other.last and other.first <= one.last:
                assert (
                    one.offset + one.reserved <= other.offset
                    or other.offset + other.reserved <= one.offset
                ), (one, other)


@st.composite
def _plans(draw: st.DrawFn) -> Plan:
    """B x static and static buffers (sizes rarely a multiple of the alignment)
    over random launches (of a family the planner does not know)."""
    count = draw(st.integers(1, 12))
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
    touched = st.lists(st.integers(0, count - 1), min_size=1, max_size=4)
    launches = tuple(
        LaunchSpec("k", ("1", "1", "1"), 1, 1, tuple(Arg(tensor=f"t{i}") for i in draw(touched)))
        for _ in range(draw(st.integers(1, 10)))
    )
    kernel = KernelSpec("k", "none", "k.py", {}, "0" * 64)
    return Plan("forward", (), (), (), buffers, (kernel,), launches, ("t0",))


@settings(max_examples=150, deadline=None)
@given(_plans(), st.sampled_from(memory.CHOICES), st.integers(1, 40))
def test_occupancy_of_random_plans(plan: Plan, strategy: str, batch: int) -> None:
    """Both layouts: the joint one at the batch, and the plan's own B-affine one,
    whose per-image buffers hold B aligned images each (``naive`` always)."""
    placed = memory.with_memory(plan, strategy)
    occupied = show.occupancy(placed, batch)
    assert occupied.arena_bytes == memory.layout(placed, batch).arena
    assert max(occupied.live_bytes) == memory.lower_bound_bytes(placed, batch)
    _check_occupancy(occupied)


def test_training_at_16_uses_the_joint_layout(plans: dict[str, Path]) -> None:
    occupied = show.occupancy(load_plan(plans["training"]), 16)
    assert occupied.joint and occupied.arena_bytes < occupied.plan_arena_bytes
    assert {s.per_image for s in occupied.spans} == {True, False}


def test_batch_range(plans: dict[str, Path]) -> None:
    assert show.batch_range(load_plan(plans["yolov8n"])) == (1, None)
    assert show.batch_range(load_plan(plans["static"])) == (1, 1)


# --- the pictures --------------------------------------------------------------


def _groups(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    found: dict[str, ET.Element] = {}
    for group in root.iter(f"{SVG}g"):
        gid = group.get("id", "")
        assert gid not in found or not gid.startswith(("launch-", "buffer-")), gid
        found[gid] = group
    return found


def _marks(group: ET.Element) -> int:
    """The markers drawn in a group: paths, or uses of a marker path defined in
    the group's ``defs`` (Matplotlib picks whichever is shorter)."""
    count = 0
    for child in group:
        if child.tag == f"{SVG}defs":
            continue
        if child.tag in (f"{SVG}path", f"{SVG}use"):
            count += 1
        else:
            count += _marks(child)
    return count


@pytest.mark.parametrize(
    ("name", "options"),
    [("lenet", []), ("training", ["--phase", "--batch", "16"]), ("yolov8n", [])],
)
def test_the_svg_has_a_marker_group_per_launch_and_a_rectangle_per_buffer(
    plans: dict[str, Path], tmp_path: Path, name: str, options: list[str]
) -> None:
    out = tmp_path / "plan.svg"
    code, stdout, stderr = _run(str(plans[name]), "-o", str(out), *options)
    assert (code, stderr) == (0, "")
    plan = load_plan(plans[name])
    assert stdout.startswith(f"teeny-plan: wrote '{out}' ({len(plan.launches)} launches")
    groups = _groups(out)
    touched = show.touches(plan)
    for index, access in enumerate(touched):
        assert _marks(groups[f"launch-{index}"]) == len(access), index
    assert f"launch-{len(plan.launches)}" not in groups
    assert {g for g in groups if g.startswith("buffer-")} == {
        f"buffer-{s.name}" for s in plan.buffers
    }
    for gid in ("lifetimes", "occupancy-live", "occupancy-top", "arena-line", "bound-line"):
        assert gid in groups, gid
    text = out.read_text()
    occupied = show.occupancy(plan, 16 if "--batch" in options else 1)
    assert f"{occupied.ratio:.3f} x the live-bytes bound" in text
    assert str(ROOT) not in text and str(tmp_path) not in text  # no paths in the picture


def test_max_buffers_keeps_the_largest_rows(plans: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "few.svg"
    argv = ["--picture", "launches", "--max-buffers", "5", "-o", str(out)]
    assert _run(str(plans["training"]), *argv)[0] == 0
    plan = load_plan(plans["training"])
    occupied = show.occupancy(plan, 1)
    largest = sorted(occupied.spans, key=lambda s: -s.size)[:5]
    groups = _groups(out)
    kept = {s.name for s in largest}
    assert sum(_marks(groups[f"launch-{i}"]) for i in range(len(plan.launches))) == sum(
        1 for access in show.touches(plan) for b in access if b in kept
    )
    assert not any(g.startswith("buffer-") for g in groups)  # no address map in this picture
    assert "5 largest of 51" in out.read_text()


def test_the_same_plan_gives_the_same_bytes(plans: dict[str, Path], tmp_path: Path) -> None:
    """In this process and in a fresh one through ``python -m``: no date, a fixed
    hash salt, the default style."""
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    assert _run(str(plans["yolov8n"]), "-o", str(first))[0] == 0
    subprocess.run(
        [sys.executable, "-m", "teeny_ir.backend.show", str(plans["yolov8n"]), "-o", str(second)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    assert first.read_bytes() == second.read_bytes()
    assert b"<dc:date>" not in first.read_bytes()


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_the_format_is_the_suffix(
    plans: dict[str, Path], tmp_path: Path, suffix: str, magic: bytes
) -> None:
    out = tmp_path / f"plan{suffix.upper()}"
    assert _run(str(plans["static"]), "-o", str(out))[0] == 0
    assert out.read_bytes().startswith(magic)


@pytest.mark.parametrize(("picture", "image"), [("launches", "plan"), ("arena", "arena")])
def test_the_docs_images_are_up_to_date(
    plans: dict[str, Path], tmp_path: Path, picture: str, image: str
) -> None:
    out = tmp_path / f"{image}.svg"
    assert _run(str(plans["yolov8n"]), "--picture", picture, "-o", str(out))[0] == 0
    committed = IMAGES / f"yolov8n-{image}.svg"
    assert committed.stat().st_size < 1_500_000
    assert out.read_bytes() == committed.read_bytes(), f"stale; regenerate: {REGENERATE}"


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{missing}", "-o", "{tmp}/x.svg"], "plan directory '{missing}' does not exist"),
        (["{yolov8n}/plan.json", "-o", "{tmp}/x.svg"], "is the plan file; give its directory"),
        (["{tmp}", "-o", "{tmp}/x.svg"], "cannot read '{tmp}/plan.json'"),
        (["{yolov8n}", "-o", "{tmp}/x.jpg"], "cannot tell the picture format of '{tmp}/x.jpg'"),
        (["{yolov8n}", "-o", "{tmp}/no/x.svg"], "the folder '{tmp}/no' does not exist"),
        (["{yolov8n}", "-o", "{tmp}"], "cannot write '{tmp}': it is a directory"),
        (["{yolov8n}", "-o", "{yolov8n}/plan.json"], "refusing to overwrite the input file"),
        (["{yolov8n}", "-o", "{kernel}"], "refusing to overwrite the input file"),
        (["{yolov8n}", "--batch", "0", "-o", "{tmp}/x.svg"], "argument --batch: 0 is below 1"),
        (["{yolov8n}", "--batch", "two", "-o", "{tmp}/x.svg"], "'two' is not an integer"),
        (["{yolov8n}", "--batch", "1000000000", "-o", "{tmp}/x.svg"], "out of the plan's range"),
        (["{static}", "--batch", "2", "-o", "{tmp}/x.svg"], "its only batch is 1"),
        (["{yolov8n}", "--phase", "-o", "{tmp}/x.svg"], "the plan's launches have no phases"),
        (["{yolov8n}", "--max-buffers", "0", "-o", "{tmp}/x.svg"], "--max-buffers: 0 is below 1"),
        (["{yolov8n}"], "the following arguments are required: -o"),
    ],
)
def test_bad_input_is_one_error_line(
    plans: dict[str, Path], tmp_path: Path, argv: list[str], message: str
) -> None:
    kernel = next((plans["yolov8n"] / "kernels").iterdir())
    names = {k: str(v) for k, v in plans.items()} | {
        "tmp": str(tmp_path),
        "missing": str(tmp_path / "missing"),
        "kernel": str(kernel),
    }
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, stderr = _run(*(a.format(**names) for a in argv))
    assert code == 1 and stdout == ""
    assert stderr.startswith("teeny-plan: error: ") and stderr.count("\n") == 1, stderr
    assert message.format(**names) in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_without_matplotlib_one_line_says_what_to_install(
    plans: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, stderr = _run(str(plans["static"]), "-o", str(tmp_path / "x.svg"))
    assert code == 1
    assert stderr == f"teeny-plan: error: drawing a plan needs Matplotlib: {show.INSTALL}\n"
    assert "pip install -e '.[examples]'" in stderr
    assert not (tmp_path / "x.svg").exists()


def test_importing_the_module_does_not_import_matplotlib() -> None:
    script = (
        "import sys, teeny_ir, teeny_ir.backend.show\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)


def test_help_goes_to_stdout() -> None:
    code, stdout, stderr = _run("--help")
    assert code == 0 and stderr == "" and "--max-buffers" in stdout


def test_the_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("teeny-plan")
    result = subprocess.run(
        [str(script), str(tmp_path / "missing"), "-o", str(tmp_path / "x.svg")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert (
        result.stderr
        == f"teeny-plan: error: plan directory '{tmp_path / 'missing'}' does not exist\n"
    )
