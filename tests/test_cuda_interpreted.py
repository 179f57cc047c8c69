"""The cuda backend end to end on a fake driver that interprets every launch
(`teeny_ir.testing.fake_cuda.Interpreting`): the kernel is found from
the cubin its module was loaded from and its arguments are decoded from the
parameter bytes alone, so every device address (parameters, inputs, arena
offsets, channel-slice views), scalar and launch shape the backend packs is
checked by the numbers it produces. The results must be bit-identical to the
interpreter backend running the same plan: the same kernels on the same
memory layout.

One harness process per run (`teeny_ir.testing.cuda_fake_harness`, with
``TRITON_INTERPRET=1``): a LeNet training plan (three SGD-with-momentum steps at
batches 2, 3 and 2, the state kept on the device: each step must see the parameters the one
before updated, copied on the device; reading the state on the host before the
third makes that step upload it again), a C2f-like inference block whose
split and concat are views of one buffer, and that block run again and again in
a session with CUDA graphs (one per batch size, replayed with each call's new
inputs) and without, bit for bit the interpreter's results.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend.triton_settings import interpreter_environment
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet"
HARNESS = "teeny_ir.testing.cuda_fake_harness"

C2F = """\
func.func @forward(%x: tensor<?x6x5x7xf32>) -> tensor<?x5x5x7xf32> {
  %w0 = graph.param "cv1.weight" : tensor<8x6x1x1xf32>
  %b0 = graph.param "cv1.bias" : tensor<8xf32>
  %c0 = graph.conv2d %x, %w0, %b0 : (tensor<?x6x5x7xf32>, tensor<8x6x1x1xf32>, tensor<8xf32>) -> tensor<?x8x5x7xf32>
  %s0 = graph.silu %c0 : tensor<?x8x5x7xf32>
  %p, %q = graph.split %s0 axis 1 sizes [3, 5] : (tensor<?x8x5x7xf32>) -> (tensor<?x3x5x7xf32>, tensor<?x5x5x7xf32>)
  %w1 = graph.param "m.weight" : tensor<5x5x3x3xf32>
  %c1 = graph.conv2d %q, %w1 padding [1, 1, 1, 1] : (tensor<?x5x5x7xf32>, tensor<5x5x3x3xf32>) -> tensor<?x5x5x7xf32>
  %s1 = graph.silu %c1 : tensor<?x5x5x7xf32>
  %cat = graph.concat %p, %q, %s1 axis 1 : (tensor<?x3x5x7xf32>, tensor<?x5x5x7xf32>, tensor<?x5x5x7xf32>) -> tensor<?x13x5x7xf32>
  %w2 = graph.param "cv2.weight" : tensor<5x13x1x1xf32>
  %b2 = graph.param "cv2.bias" : tensor<5xf32>
  %y = graph.conv2d %cat, %w2, %b2 : (tensor<?x13x5x7xf32>, tensor<5x13x1x1xf32>, tensor<5xf32>) -> tensor<?x5x5x7xf32>
  func.return %y : tensor<?x5x5x7xf32>
}
"""


def _emit(source: str, pipeline: str, out: Path) -> Path:
    stderr = io.StringIO()
    code = opt.run(
        ["-", "-p", f"{pipeline},emit-triton{{out-dir={out} archs=90}}", "-o", os.devnull],
        io.BytesIO(source.encode()),
        io.StringIO(),
        stderr,
    )
    assert code == 0, stderr.getvalue()
    return out


def _harness(tmp_path: Path, request: dict[str, object]) -> dict[str, np.ndarray]:
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    results = tmp_path / "results.npz"
    done = subprocess.run(
        [sys.executable, "-m", HARNESS, str(tmp_path / "request.json"), str(results)],
        env=interpreter_environment(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with np.load(results, allow_pickle=False) as loaded:
        return dict(loaded)


@pytest.mark.slow
def test_lenet_training_steps_on_the_interpreting_fake_match_the_interpreter(
    tmp_path: Path,
) -> None:
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    plan = _emit(
        teeny_ir.print_module(module),
        "teeny-training{optimizer=sgd lr=0.05 momentum=0.9 weight-decay=0.01 profile=gpu}",
        tmp_path / "plan",
    )
    rng = np.random.default_rng(7)
    batches = (2, 3, 2)  # a new batch size reallocates the arena, not the state
    steps = len(batches)
    arrays = {}
    for step, batch in enumerate(batches):
        arrays[f"step{step}_in0"] = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
        arrays[f"step{step}_in1"] = rng.integers(0, 10, batch).astype(np.int64)
    np.savez(tmp_path / "inputs.npz", **arrays)
    weights = str(LENET / "lenet.safetensors")
    request = {
        "plan": str(plan),
        "weights": weights,
        "inputs": str(tmp_path / "inputs.npz"),
        "mode": "train",
        "steps": steps,
        "touch_state_before": 2,
    }
    got = _harness(tmp_path, request)
    round_trip = _harness(tmp_path, request | {"round_trip": True})
    assert not bool(round_trip["resident"])
    executable = runtime.load(plan)
    assert int(got["launches"]) == steps * len(executable.plan.launches)
    with executable.trainer(weights) as trainer:
        for step in range(steps):
            results = trainer.step([arrays[f"step{step}_in0"], arrays[f"step{step}_in1"]])
            for k, want in enumerate(results):
                assert np.array_equal(got[f"step{step}_result{k}"], want), (step, k)
                assert np.array_equal(round_trip[f"step{step}_result{k}"], want), (step, k)
        state = trainer.state_dict()
    initial = runtime.read_weights(weights)
    for name, want in state.items():
        assert np.array_equal(got[f"state.{name}"], want), name
        assert np.array_equal(round_trip[f"state.{name}"], want), name
        if name in initial:  # every parameter moved, on both backends alike
            assert not np.array_equal(want, initial[name]), name
    losses = [float(got[f"step{s}_result0"]) for s in range(steps)]
    assert all(np.isfinite(losses)) and losses[0] != losses[1]
    # The state stays on the device: a step uploads its inputs only and reads back
    # the user results (and status) only, but after the host's state was read.
    assert bool(got["resident"])
    spec = executable.plan
    inputs = [sum(arrays[f"step{s}_in{i}"].nbytes for i in range(2)) for s in range(steps)]
    params = sum(4 * int(np.prod(p.shape)) for p in spec.params)
    state = sum(4 * int(np.prod(p.shape)) for p in spec.params if p.derivation.kind == "identity")
    first, second, third = (got[f"step{s}_bytes"] for s in range(steps))
    assert first[0] == params + inputs[0] and third[0] == params + inputs[2]
    assert second[0] == inputs[1]
    assert first[1] == third[1] < second[1] < 4096  # the loss, the logits, the status
    assert first[2] == second[2] == third[2] == state


def _c2f_weights(tmp_path: Path) -> dict[str, np.ndarray]:
    """Random weights of the C2f block, also saved as ``w.safetensors``."""
    rng = np.random.default_rng(3)
    shapes = {
        "cv1.weight": (8, 6, 1, 1),
        "cv1.bias": (8,),
        "m.weight": (5, 5, 3, 3),
        "cv2.weight": (5, 13, 1, 1),
        "cv2.bias": (5,),
    }
    weights = {n: (0.3 * rng.standard_normal(s)).astype(np.float32) for n, s in shapes.items()}
    save_file(weights, str(tmp_path / "w.safetensors"))
    return weights


@pytest.mark.slow
@pytest.mark.parametrize("batch", [3])
def test_views_of_a_split_and_concat_on_the_interpreting_fake(tmp_path: Path, batch: int) -> None:
    plan = _emit(C2F, "teeny-inference{profile=gpu}", tmp_path / "plan")
    executable = runtime.load(plan)
    assert executable.plan.views, "the block should place its split and concat as views"
    weights = _c2f_weights(tmp_path)
    x = np.random.default_rng(4).standard_normal((batch, 6, 5, 7)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", in0=x)
    got = _harness(
        tmp_path,
        {
            "plan": str(plan),
            "weights": str(tmp_path / "w.safetensors"),
            "inputs": str(tmp_path / "inputs.npz"),
            "mode": "run",
            "steps": 0,
        },
    )
    (want,) = executable.run([x], weights)
    assert np.array_equal(got["output_0"], want)
    assert np.isfinite(want).all()


def test_cuda_graphs_replay_the_launches_bit_for_bit(tmp_path: Path) -> None:
    """A session with graphs: one graph per batch size (batches 2, 3, 2, 3: two
    captures, four replays), each call's new inputs copied into the buffers the
    graph reads; every output the same bits as the stream launches' and the
    interpreter backend's for that call's inputs."""
    plan = _emit(C2F, "teeny-inference{profile=gpu}", tmp_path / "plan")
    weights = _c2f_weights(tmp_path)
    rng = np.random.default_rng(11)
    batches = (2, 3, 2, 3)
    inputs = [rng.standard_normal((b, 6, 5, 7)).astype(np.float32) for b in batches]
    np.savez(tmp_path / "inputs.npz", **{f"step{c}_in0": x for c, x in enumerate(inputs)})
    got = _harness(
        tmp_path,
        {
            "plan": str(plan),
            "weights": str(tmp_path / "w.safetensors"),
            "inputs": str(tmp_path / "inputs.npz"),
            "mode": "session",
            "steps": len(batches),
        },
    )
    launches = len(runtime.load(plan).plan.launches)
    calls = len(batches)
    # begin capture, instantiate, graph launch, cuLaunchKernel, exec destroy, ran
    assert list(got["graphs_calls"]) == [2, 2, calls, 2 * launches, 2, calls * launches]
    assert list(got["stream_calls"]) == [0, 0, 0, calls * launches, 0, calls * launches]
    with runtime.load(plan).session(weights) as session:  # the interpreter's worker
        for call, x in enumerate(inputs):
            (want,) = session.run([x])
            assert np.isfinite(want).all() and want.shape[0] == batches[call]
            assert np.array_equal(got[f"graphs_call{call}_output_0"], want), call
            assert np.array_equal(got[f"stream_call{call}_output_0"], want), call
    # the same batch size with other inputs: other results (the inputs were swapped)
    assert not np.array_equal(got["graphs_call0_output_0"], got["graphs_call2_output_0"])
