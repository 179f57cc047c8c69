"""A small hand-written launch plan, its weights, inputs and numpy reference,
and the edits its loader must refuse: the plan loader's, the runtime's and
teeny-run's tests share it.

`write_fixture` writes the plan (a fused 1x1 conv + BN + SiLU, then a
broadcasting add) from the real family templates; `REJECTIONS` lists edits of
its ``plan.json`` (name, edit, a part of the loader's message; None: see
tests/test_plan.py) that `teeny_ir.backend.plan.load_plan` must refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from teeny_ir import testing
from teeny_ir.backend import memory
from teeny_ir.backend.plan import (
    VERSION,
    Arg,
    KernelSpec,
    LaunchSpec,
    ParamSpec,
    Plan,
    SourceSpec,
    TensorSpec,
    WeightSpec,
    sha256_of,
    write_plan,
)
from teeny_ir.core import derivations
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render

C_IN, C_OUT, H, W = 5, 6, 3, 7
M = H * W
EPS = 1e-3
PREFIX = "model.0."


def _kernel(
    directory: Path, family: str, ordinal: int, constexprs: dict[str, int | str]
) -> KernelSpec:
    name = f"{family}_{ordinal}"
    path = directory / "kernels" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(FAMILIES[family], name, constexprs))
    return KernelSpec(name, family, f"kernels/{name}.py", constexprs, sha256_of(path))


def _expr(text: str) -> Arg:
    return Arg(expr=text)


def write_fixture(directory: Path) -> Plan:
    """Write ``plan.json`` and kernels: ``t0 = silu(bn(conv1x1(in0)))``, ``t1 = t0 + in1``."""
    gemm = _kernel(
        directory,
        "conv1x1_gemm",
        0,
        {
            "BLOCK_M": 16,
            "BLOCK_N": 16,
            "BLOCK_K": 16,
            "GROUP_M": 8,
            "ACTIVATION": "silu",
        },
    )
    add = _kernel(directory, "elementwise", 0, {"OP": "add", "BLOCK": 128})
    bn = [f"{PREFIX}bn.{n}" for n in ("weight", "bias", "running_mean", "running_var")]
    params = (
        ParamSpec("p0", (C_OUT, C_IN), derivations.reshape(f"{PREFIX}conv.weight", (C_OUT, C_IN))),
        ParamSpec("p1", (C_OUT,), derivations.bn_scale(bn[0], bn[3], EPS, C_OUT)),
        ParamSpec("p2", (C_OUT,), derivations.bn_shift(bn[0], bn[1], bn[2], bn[3], EPS, C_OUT)),
    )
    t, e = Arg, _expr
    plan = Plan(
        function="forward",
        inputs=(TensorSpec("in0", ("B", C_IN, H, W)), TensorSpec("in1", ("B", C_OUT, 1, W))),
        weights=(
            WeightSpec(f"{PREFIX}conv.weight", (C_OUT, C_IN, 1, 1)),
            *(WeightSpec(name, (C_OUT,)) for name in bn),
        ),
        params=params,
        buffers=(TensorSpec("t0", ("B", C_OUT, H, W)), TensorSpec("t1", ("B", C_OUT, H, W))),
        kernels=(gemm, add),
        launches=(
            LaunchSpec(
                gemm.name,
                (f"B * cdiv({M}, 16) * cdiv({C_OUT}, 16)", "1", "1"),
                4,
                2,
                (
                    # No residual: r is bound to the input and never read
                    # (the last dim, HAS_RESIDUAL, is 0).
                    *(t(name) for name in ("in0", "p0", "p1", "p2", "in0", "t0")),
                    *(e(x) for x in ("B", str(C_IN), str(C_OUT), str(M))),
                    *(e(str(x)) for x in (C_IN * M, C_IN * M, C_OUT * M, 0)),
                ),
                (
                    SourceSpec("graph.conv2d", "m.mlir:3:8"),
                    SourceSpec("graph.batch_norm", "m.mlir:4:8"),
                    SourceSpec("graph.silu"),
                ),
            ),
            LaunchSpec(
                add.name,
                (f"cdiv(B * {C_OUT * M}, 128)", "1", "1"),
                4,
                1,
                (
                    *(t(name) for name in ("t0", "in1", "t1")),
                    *(e(x) for x in (f"B * {C_OUT * M}", "1", "B", str(C_OUT), str(H), str(W))),
                    # Rank 6: the two leading strides are each operand's element count.
                    *(e(f"B * {C_OUT * M}") for _ in range(2)),
                    *(e(str(x)) for x in (C_OUT * M, M, W, 1)),
                    *(e(f"B * {C_OUT * W}") for _ in range(2)),
                    *(e(str(x)) for x in (C_OUT * W, W, 0, 1)),
                ),
                (SourceSpec("graph.add", "m.mlir:5:8"),),
            ),
        ),
        outputs=("t1", "t0"),
    )
    plan = memory.with_memory(plan)
    write_plan(directory, plan)
    return plan


def fixture_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        f"{PREFIX}conv.weight": rng.standard_normal((C_OUT, C_IN, 1, 1)).astype(f32),
        f"{PREFIX}bn.weight": rng.uniform(0.5, 1.5, C_OUT).astype(f32),
        f"{PREFIX}bn.bias": (0.1 * rng.standard_normal(C_OUT)).astype(f32),
        f"{PREFIX}bn.running_mean": (0.1 * rng.standard_normal(C_OUT)).astype(f32),
        f"{PREFIX}bn.running_var": rng.uniform(0.5, 1.5, C_OUT).astype(f32),
        f"{PREFIX}bn.num_batches_tracked": np.array(7, dtype=np.int64),
    }


def fixture_inputs(batch: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((batch, C_IN, H, W)).astype(np.float32),
        rng.standard_normal((batch, C_OUT, 1, W)).astype(np.float32),
    ]


def fixture_reference(inputs: list[np.ndarray], weights: dict[str, np.ndarray]) -> list[np.ndarray]:
    """numpy in float64: ``[t0 + in1, t0]`` with ``t0 = silu(bn(conv1x1(in0)))``."""
    x, bias = (a.astype(np.float64) for a in inputs)
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    conv = np.einsum("oi,bihw->bohw", w[f"{PREFIX}conv.weight"][:, :, 0, 0], x)
    scale = w[f"{PREFIX}bn.weight"] / np.sqrt(w[f"{PREFIX}bn.running_var"] + EPS)
    shift = w[f"{PREFIX}bn.bias"] - scale * w[f"{PREFIX}bn.running_mean"]
    v = conv * scale[None, :, None, None] + shift[None, :, None, None]
    t0 = v / (1 + np.exp(-v))
    return [t0 + bias, t0]


def assert_close(
    got: list[np.ndarray], ref: list[np.ndarray], tol: float = testing.REDUCTION_TOL
) -> None:
    """The fixture's check of a run (float32 outputs) against `fixture_reference`."""
    testing.assert_close(got, ref, tol, dtype=np.float32)


def set_at(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets ``data[a][b]...`` for a ``/``-separated path."""

    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[int(last) if isinstance(target, list) else last] = value

    return change


REJECTIONS = [
    ("older version", set_at("version", VERSION - 1), f"is plan version {VERSION - 1}, but this"),
    ("newer version", set_at("version", VERSION + 1), f"reads version {VERSION}"),
    ("version type", set_at("version", "2"), "does not match the plan schema at version"),
    ("format", set_at("format", "other"), "plan schema at format"),
    ("extra key", set_at("launches/0/extra", 1), "plan schema at launches/0"),
    ("warps type", set_at("launches/0/num_warps", "4"), "plan schema at launches/0/num_warps"),
    ("too many warps", set_at("launches/0/num_warps", 64), "launches/0/num_warps"),
    ("two-axis grid", set_at("launches/0/grid", ["1", "1"]), "launches/0/grid"),
    ("dtype", set_at("inputs/0/dtype", "f16"), "inputs/0/dtype"),
    ("bad hash text", set_at("kernels/0/source_sha256", "xyz"), "kernels/0/source_sha256"),
    ("generated name", set_at("buffers/0/name", "t0; import os"), "buffers/0/name"),
    ("unknown family", set_at("kernels/1/family", "winograd"), "unknown family 'winograd'"),
    ("string in a grid", set_at("launches/0/grid/0", '__import__("os")'), "unexpected character"),
    ("call in a grid", set_at("launches/0/grid/0", "__import__(os, 1)"), "call of '__import__'"),
    ("other call", set_at("launches/1/grid/0", "pow(B, 2)"), "call of 'pow' is not allowed"),
    ("attribute in a grid", set_at("launches/1/grid/1", "B.bit_length"), "unexpected character"),
    ("symbol other than B", set_at("launches/0/args/7/expr", "C"), "only 'B' is allowed"),
    ("symbol in a shape", set_at("buffers/1/shape/1", "N"), "only 'B' is allowed"),
    ("arg count", lambda d: d["launches"][0]["args"].pop(), "passes 13 arguments"),
    (
        "residual flag as a constexpr",
        set_at("kernels/0/constexprs/HAS_RESIDUAL", 0),
        "family 'conv1x1_gemm' has no constexpr 'HAS_RESIDUAL'",
    ),
    (
        "residual flag without room for the residual",
        set_at("launches/0/args/13/expr", "1"),
        f"argument 'r' may touch {C_OUT * M} elements at B = 1",
    ),
    (
        "param arg bound to an input",
        set_at("launches/0/args/1", {"tensor": "in0"}),
        "argument 'w' (param) must refer to: param; got input 'in0'",
    ),
    (
        "output bound to an input",
        set_at("launches/1/args/2", {"tensor": "in1"}),
        "argument 'out' (output) must refer to: buffer or view; got input 'in1'",
    ),
    ("tensor for a dim", set_at("launches/0/args/6", {"tensor": "in0"}), "must be an expression"),
    ("expr for a pointer", set_at("launches/0/args/0", {"expr": "B"}), "must be a tensor"),
    ("undefined tensor", set_at("launches/0/args/0", {"tensor": "in7"}), "undefined tensor 'in7'"),
    (
        "read before write",
        set_at("launches/0/args/0", {"tensor": "t1"}),
        "reads buffer 't1' before launches have written all of it",
    ),
    (
        "wrong batch stride",
        set_at("launches/0/args/10/expr", str(C_IN * M + 1)),
        f"argument 'x_batch_stride' = '{C_IN * M + 1}' is {C_IN * M + 1} at B = 1, "
        f"but 'in0' (bound to 'x') has batch stride {C_IN * M}",
    ),
    ("unknown kernel", set_at("launches/0/kernel", "nope_0"), "names no kernel"),
    ("output is a param", set_at("outputs/0/tensor", "p0"), "output 'p0'"),
    ("duplicate tensor", set_at("buffers/1/name", "t0"), "tensor 't0' is defined twice"),
    (
        "weight of the wrong size",
        set_at("weights/0/shape", [C_OUT, C_IN + 1, 1, 1]),
        f"weight '{PREFIX}conv.weight' has shape [6, 6, 1, 1], expected 30 elements",
    ),
    ("missing weight", lambda d: d["weights"].pop(1), f"weight '{PREFIX}bn.weight' is missing"),
    ("slot vs derivation", set_at("params/1/shape", [C_OUT + 1]), "but its derivation gives [6]"),
    ("bad derivation", set_at("params/1/derivation/sources", ["a"]), "takes 2 source weights"),
    (
        "missing constexpr",
        lambda d: d["kernels"][0]["constexprs"].pop("GROUP_M"),
        "missing constexpr 'GROUP_M'",
    ),
    ("constexpr type", set_at("kernels/1/constexprs/OP", 9), "must name a pointwise-table entry"),
    ("unknown op", set_at("kernels/1/constexprs/OP", "no_such_op"), "'no_such_op' is not an entry"),
    ("code in an op", set_at("kernels/1/constexprs/OP", "add(x=os)"), "unexpected option 'x'"),
    ("activation", set_at("kernels/0/constexprs/ACTIVATION", "add"), "'add' is not one of none"),
    (
        "power of two",
        set_at("kernels/1/constexprs/BLOCK", 100),
        "'BLOCK' = 100 must be a power of two",
    ),
    ("hash mismatch", set_at("kernels/0/source_sha256", "0" * 64), "but the plan records"),
    ("escaping path", set_at("kernels/0/file", "../outside.py"), "must be a relative path inside"),
    ("absolute path", set_at("kernels/0/file", "/etc/passwd"), "must be a relative path inside"),
    ("missing file", set_at("kernels/0/file", "kernels/none.py"), "cannot be read"),
    ("no batch input", set_at("inputs/0/shape/0", 2), None),
]
