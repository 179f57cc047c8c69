"""The torch.export frontend (`teeny_ir.frontend.torch`) and ``teeny-import`` of a ``.pt2``.

Small modules, one or more per handler, are exported, imported and run in the
reference interpreter against PyTorch; a LeNet and a residual block with a
depthwise conv, exported with a dynamic batch ``Dim``, import with ``?``,
compile (``teeny-inference{profile=interpreter},emit-triton``) and run in the
interpreter backend at batch 1 and 3; parameters keep their state-dict names;
refusals name the op and the module path; and ``teeny-import`` writes a
``torch.export.save`` file's module and weights, or refuses it in one line.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from xdsl.dialects.func import FuncOp

import teeny_ir
from dialects.graph.elementwise import SigmoidOp, SiluOp
from dialects.graph.param import ParamOp
from teeny_ir import reference, runtime
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.driver.import_model import main
from teeny_ir.frontend.losses import add_cross_entropy_loss
from teeny_ir.frontend.torch import TORCH_RULES, import_exported, import_module
from teeny_ir.frontend.torch.context import rule_key
from teeny_ir.testing import REDUCTION_TOL, assert_close


class _Lambda(nn.Module):  # type: ignore[misc]
    """A module whose forward is ``fn`` (one handler's op, with odd shapes)."""

    def __init__(self, fn: Callable[..., Any], channels: int = 0) -> None:
        super().__init__()
        self.fn = fn
        if channels:
            self.w = nn.Parameter(torch.randn(channels, channels))

    def forward(self, *xs: Any) -> Any:
        return self.fn(self, *xs)


def _check(module: nn.Module, *shapes: tuple[int, ...], dynamic: bool = False) -> Any:
    torch.manual_seed(0)
    module.eval()
    xs = [torch.randn(*s) for s in shapes]
    imported = import_module(module, xs, dynamic_batch=dynamic)
    with torch.no_grad():
        want = module(*xs)
    flat = [t.numpy() for t in (want if isinstance(want, (tuple, list)) else [want])]
    got = reference.run(imported.module, imported.weights, [x.numpy() for x in xs])
    assert_close(got, flat, REDUCTION_TOL)
    return imported


def _ops(imported: Any) -> list[str]:
    return [op.name for op in imported.module.walk() if op.name.startswith("graph.")]


_CASES: dict[str, tuple[Callable[[], nn.Module], list[tuple[int, ...]]]] = {
    "conv_groups_stride_dilation": (
        lambda: nn.Conv2d(4, 6, 3, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
        [(2, 4, 7, 9)],
    ),
    "conv_same_no_bias": (
        lambda: nn.Conv2d(3, 5, (3, 5), padding="same", bias=False),
        [(1, 3, 6, 7)],
    ),
    "activations": (
        lambda: _Lambda(
            lambda m, x: torch.cat(
                [
                    F.relu(x),
                    F.silu(x),
                    torch.sigmoid(x),
                    torch.tanh(x),
                    F.hardswish(x),
                    F.gelu(x),
                    F.gelu(x, approximate="tanh"),
                    F.leaky_relu(x, 0.2),
                    F.hardtanh(x, -0.5, 0.7),
                    F.relu6(x * 4),
                    F.elu(x, 0.5),
                    torch.exp(x).log(),
                    x.abs().sqrt(),
                    torch.sin(x) * torch.cos(x),
                    -x,
                ],
                dim=1,
            )
        ),
        [(2, 3, 5)],
    ),
    "arithmetic_scalars": (
        lambda: _Lambda(
            lambda m, x, y: (
                (x + y, x - 2.5 * y, x * 3, y / 4, 1 - x, torch.add(x, y, alpha=2), x / y, x**2)
            )
        ),
        [(2, 3, 4), (1, 3, 4)],
    ),
    "cat_chunk_split": (
        lambda: _Lambda(
            lambda m, x: (
                *torch.chunk(x, 3, dim=1),
                *torch.split(x, [1, 4, 2], dim=1),
                *torch.split(x, 3, dim=-1),
                torch.cat([x, x * 2], dim=2),
            )
        ),
        [(2, 7, 5)],
    ),
    "views": (
        lambda: _Lambda(
            lambda m, x: (
                x.view(x.shape[0], -1),
                x.reshape(2, 5, 3, 2).permute(0, 2, 3, 1),
                torch.flatten(x, 2),
                x.transpose(1, 3).contiguous(),
                x.unsqueeze(2).squeeze(2).clone(),
                x[:, :1].expand(2, 3, 2, 5),
            )
        ),
        [(2, 3, 2, 5)],
    ),
    "pools": (
        lambda: _Lambda(
            lambda m, x: (
                F.max_pool2d(x, 3, 2, 1),
                F.max_pool2d(x, (2, 3), ceil_mode=True),
                F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                F.adaptive_avg_pool2d(x, 1),
                F.adaptive_avg_pool2d(x, (2, 4)),
                F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(12, 24), mode="nearest"),
            )
        ),
        [(2, 3, 6, 8)],
    ),
    "linear_and_products": (
        lambda: _Lambda(
            lambda m, x, y: (
                F.linear(x, m.w, None),
                x @ m.w,
                torch.mm(x[0], m.w),
                torch.bmm(y, y.transpose(1, 2)),
                torch.addmm(m.w[0], x[0], m.w),
                torch.matmul(y, m.w[:5, :4]),
            ),
            channels=5,
        ),
        [(2, 3, 5), (2, 3, 5)],
    ),
    "softmax_and_reductions": (
        lambda: _Lambda(
            lambda m, x: (
                torch.softmax(x, -1),
                torch.log_softmax(x, 1),
                x.mean(dim=(1, 3)),
                x.sum(dim=2, keepdim=True),
                x.mean(),
                x.sum(-1),
            )
        ),
        [(2, 3, 4, 5)],
    ),
    "batch_norm_no_affine": (lambda: nn.BatchNorm2d(3, affine=False), [(2, 3, 4, 5)]),
    "dropout_detach_stack": (
        lambda: _Lambda(lambda m, x: torch.stack([F.dropout(x, 0.5, False), x.detach()], 2)),
        [(2, 3, 4)],
    ),
    "folded_shapes": (
        # Anchor-style constants: arange, meshgrid, stack, new_full, type_as, item.
        lambda: _Lambda(
            lambda m, x: (
                x
                + torch.stack(
                    torch.meshgrid(
                        torch.arange(x.shape[2]), torch.arange(x.shape[3]), indexing="ij"
                    ),
                    0,
                ).type_as(x)
                * x.new_full((1,), 0.5)
                + torch.full((x.shape[3],), 2.0).sum().item()
            )
        ),
        [(2, 2, 3, 4)],
    ),
}


@pytest.mark.parametrize("which", list(_CASES))
def test_handlers_against_pytorch(which: str) -> None:
    make, shapes = _CASES[which]
    torch.manual_seed(1)
    _check(make(), *shapes)


def test_silu_stays_one_op_and_bn_is_one_op() -> None:
    block = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.SiLU())
    imported = _check(_trained_bn(block, block[1]), (2, 3, 6, 6))
    assert _ops(imported).count("graph.silu") == 1
    assert "graph.batch_norm" in _ops(imported)
    assert not any(isinstance(op, SigmoidOp) for op in imported.module.walk())


def test_every_rule_is_reachable_by_key() -> None:
    for key in TORCH_RULES.rules():
        assert TORCH_RULES.lookup(key) is not None
    assert rule_key(torch.ops.aten.add.Scalar) == "aten.add"
    import operator

    assert rule_key(operator.getitem) == "operator.getitem"


# LeNet and a depthwise residual block (the shapes of tests/test_onnx_import.py).


def _lenet() -> Any:
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )


class _Residual(nn.Module):  # type: ignore[misc]
    """A depthwise conv + BN + SiLU residual block; chunk, ReLU6, mean, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 8, 1)

    def forward(self, x: Any) -> Any:
        y = self.pw(F.silu(self.bn(self.dw(x)))) + x
        a, b = torch.cat([y, F.relu6(y)], 1).chunk(2, dim=1)
        z = (a * b).mean(dim=(2, 3))
        return torch.softmax(z.view(z.shape[0], -1), dim=1)


def _trained_bn(model: Any, bn: Any) -> Any:
    channels = bn.num_features
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(channels))
        bn.running_var.copy_(torch.rand(channels) + 0.5)
        if bn.affine:
            bn.weight.copy_(torch.randn(channels))
            bn.bias.copy_(torch.randn(channels))
    return model.eval()


def _model(which: str) -> tuple[Any, tuple[int, ...]]:
    torch.manual_seed(2)
    if which == "lenet":
        return _lenet().eval(), (1, 28, 28)
    block = _Residual()
    return _trained_bn(block, block.bn), (8, 6, 6)


def _dynamic_export(model: Any, sample: tuple[int, ...]) -> Any:
    batch = torch.export.Dim("batch")
    return torch.export.export(
        model, (torch.randn(2, *sample),), dynamic_shapes=({0: batch},), strict=False
    )


@pytest.mark.parametrize("which", ["lenet", "residual"])
def test_dynamic_exports_compile_and_equal_pytorch(tmp_path: Path, which: str) -> None:
    model, sample = _model(which)
    imported = import_exported(_dynamic_export(model, sample))
    text = teeny_ir.print_module(imported.module)
    assert "tensor<?x" in text
    names = [op.param_name.data for op in imported.module.walk() if isinstance(op, ParamOp)]
    assert names == list(imported.weights)
    want_names = [k for k in model.state_dict() if not k.endswith("num_batches_tracked")]
    assert sorted(names) == sorted(want_names)
    for name, array in imported.weights.items():
        assert array.dtype == np.float32
        np.testing.assert_array_equal(array, model.state_dict()[name].numpy())
    if which == "residual":
        assert any(isinstance(op, SiluOp) for op in imported.module.walk())
    kernels = teeny_ir.parse_module(text, filename="m.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(
        f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(kernels)
    executable = runtime.load(out)
    for batch in (1, 3):
        x = torch.randn(batch, *sample)
        with torch.no_grad():
            want = model(x).numpy()
        assert_close(
            reference.run(imported.module, imported.weights, [x.numpy()]), [want], REDUCTION_TOL
        )
        assert_close(executable.run([x.numpy()], imported.weights), [want], REDUCTION_TOL)


def test_import_module_traces_a_batch_one_example_as_dynamic() -> None:
    model, sample = _model("residual")
    imported = _check(model, (1, *sample), dynamic=True)
    assert "tensor<?x8x6x6xf32>" in teeny_ir.print_module(imported.module)


def test_a_specialised_batch_warns_once_and_imports_static() -> None:
    model = _Lambda(lambda m, x: x.reshape(6, -1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        imported = _check(model, (3, 2, 4), dynamic=True)
    mine = [w for w in caught if "specialises the batch" in str(w.message)]
    assert len(mine) == 1 and "\n" not in str(mine[0].message)
    assert "static batch 3" in str(mine[0].message)
    assert "tensor<3x2x4xf32>" in teeny_ir.print_module(imported.module)


# Refusals: one located line naming the op and the module path.


class _Outer(nn.Module):  # type: ignore[misc]
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.Identity(), inner)

    def forward(self, x: Any) -> Any:
        return self.head(x)


def _refusal(module: nn.Module, *shapes: tuple[int, ...]) -> str:
    with pytest.raises(DiagnosticError) as caught:
        import_module(module.eval(), [torch.randn(*s) for s in shapes], dynamic_batch=False)
    (diagnostic,) = caught.value.diagnostics
    header = diagnostic.header()
    assert "\n" not in header
    return header


def test_refusal_names_the_op_and_the_module_path() -> None:
    header = _refusal(_Outer(_Lambda(lambda m, x: torch.cumsum(x, 1))), (2, 3))
    assert header.startswith("<_Outer>:head.1 node 'cumsum' (test_torch_import.py:")
    assert header.endswith("error: aten.cumsum.default: unsupported op")


@pytest.mark.parametrize(
    ("fn", "shapes", "expected"),
    [
        (
            lambda m, x: F.adaptive_avg_pool2d(x, (4, 4)),
            [(1, 2, 6, 6)],
            "aten.adaptive_avg_pool2d.default: output size [4, 4] does not divide the "
            "input's 6x6 evenly",
        ),
        (
            lambda m, x: F.interpolate(x, scale_factor=1.5, mode="nearest"),
            [(1, 2, 4, 4)],
            "aten.upsample_nearest2d.vec: output size [6, 6] is not an integer multiple of [4, 4]",
        ),
        (
            lambda m, x: x.argmax(1).float(),
            [(2, 3)],
            "aten.argmax.default: unsupported op",
        ),
        (
            lambda m, x: torch.div(x, 2, rounding_mode="floor"),
            [(2, 3)],
            "aten.div.Tensor_mode: unsupported rounding_mode='floor'",
        ),
    ],
)
def test_refusals(fn: Any, shapes: list[tuple[int, ...]], expected: str) -> None:
    assert _refusal(_Lambda(fn), *shapes).endswith(f"error: {expected}")


class _ConvBn(nn.Module):  # type: ignore[misc]
    """conv + BN + ReLU (+ a linear head for training); BN stats not the defaults."""

    def __init__(self, head: bool) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4, momentum=0.2)
        self.fc = nn.Linear(4 * 6 * 6, 5) if head else None

    def forward(self, x: Any) -> Any:
        y = torch.relu(self.bn(self.conv(x)))
        return y if self.fc is None else self.fc(y.flatten(1))


def test_a_training_export_maps_its_running_statistic_updates() -> None:
    """A module exported in train(): BN normalises by the batch, and the buffer
    mutations are results after the outputs, named by their buffers."""
    torch.manual_seed(0)
    model = _ConvBn(head=False)
    _trained_bn(model, model.bn)
    model.train()
    x = torch.randn(3, 2, 6, 6)
    imported = import_module(model, [x])  # dynamic batch: traced at 2, run at 3
    forward = next(iter(imported.module.ops))
    assert isinstance(forward, FuncOp)
    attrs = [dict(a.data) for a in forward.res_attrs.data] if forward.res_attrs else []
    assert [{k: v.data for k, v in a.items()} for a in attrs] == [
        {},
        {"teeny.running": "bn.running_mean"},
        {"teeny.running": "bn.running_var"},
    ]
    got = reference.run(imported.module, imported.weights, [x.numpy()])
    with torch.no_grad():
        want = model(x)  # updates model.bn's running statistics
    want_stats = [model.bn.running_mean.numpy(), model.bn.running_var.numpy()]
    assert_close(got, [want.numpy(), *want_stats], REDUCTION_TOL)


def test_a_buffer_update_other_than_batch_norm_is_refused() -> None:
    class Accumulate(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("total", torch.zeros(3))

        def forward(self, x: Any) -> Any:
            self.total.add_(x.sum(0))
            return x * 2

    header = _refusal(Accumulate(), (2, 3))
    assert header.startswith("<Accumulate>:node 'add'")
    assert header.endswith(
        "error: buffer 'total' is updated by something other than a training batch norm's "
        "running statistics: only those buffer updates are imported"
    )


def test_an_imported_eval_program_trains_like_pytorch_in_train_mode(tmp_path: Path) -> None:
    """import_module (eval mode) + a cross-entropy loss + teeny-training (SGD with
    momentum), three steps in Triton's interpreter, against PyTorch in float64 with
    the BN layer in train(): the losses, the logits, and the trainer's state dict
    (parameters, BN running statistics, momentum buffers) by state-dict name."""
    torch.manual_seed(3)
    model = _ConvBn(head=True)
    _trained_bn(model, model.bn)
    imported = import_module(model, [torch.randn(4, 2, 6, 6)], dynamic_batch=False)
    add_cross_entropy_loss(imported.module)
    out = tmp_path / "plan"
    teeny_ir.PassManager.parse(
        "teeny-training{optimizer=sgd lr=0.1 momentum=0.9 profile=interpreter},"
        f"emit-triton{{out-dir={out}}}"
    ).run(imported.module)
    reference_model = _ConvBn(head=True).double()
    reference_model.load_state_dict(model.state_dict())
    reference_model.train()
    sgd = torch.optim.SGD(reference_model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    with runtime.load(out).trainer(imported.weights) as trainer:
        for _ in range(3):
            x = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
            targets = rng.integers(0, 5, 4).astype(np.int64)
            loss, logits = trainer.step([x, targets])
            sgd.zero_grad()
            want_logits = reference_model(torch.tensor(x, dtype=torch.float64))
            want_loss = F.cross_entropy(want_logits, torch.tensor(targets))
            want_loss.backward()
            sgd.step()
            want = [want_loss.detach().numpy(), want_logits.detach().numpy()]
            assert_close([loss, logits], want, REDUCTION_TOL)
        state = trainer.state_dict()
    want_state = {
        k: v.numpy() for k, v in reference_model.state_dict().items() if "num_batches" not in k
    }
    for name, p in reference_model.named_parameters():
        want_state[f"{name}.momentum_buffer"] = sgd.state[p]["momentum_buffer"].numpy()
    assert sorted(state) == sorted(want_state)
    assert_close([state[k] for k in want_state], list(want_state.values()), REDUCTION_TOL)


def test_an_integer_buffer_used_as_data_is_refused() -> None:
    class Counter(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.tensor([3], dtype=torch.int64))

        def forward(self, x: Any) -> Any:
            return x * self.count

    header = _refusal(Counter(), (2, 3))
    assert header.startswith("<Counter>:node 'mul'")
    assert header.endswith(
        "error: aten.mul.Tensor: buffer 'count' of type int64 is used as data: graph ops take f32"
    )


# teeny-import MODEL.pt2.


def _cli(*argv: str) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = main(list(argv))
    return code, stderr.getvalue()


def test_cli_writes_the_module_and_weights(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    model, sample = _model("residual")
    path = tmp_path / "block.pt2"
    torch.export.save(_dynamic_export(model, sample), str(path))
    code, err = _cli(str(path), "-o", str(tmp_path / "out.mlir"))
    assert (code, err) == (0, "")
    module = teeny_ir.parse_module((tmp_path / "out.mlir").read_text(), filename="out.mlir")
    weights = load_file(str(tmp_path / "out.safetensors"))
    assert "bn.running_mean" in weights and "dw.weight" in weights
    x = torch.randn(3, *sample)
    with torch.no_grad():
        want = model(x).numpy()
    assert_close(reference.run(module, weights, [x.numpy()]), [want], REDUCTION_TOL)


def test_cli_refuses_a_program_it_cannot_import(tmp_path: Path) -> None:
    path = tmp_path / "cumsum.pt2"
    module = _Outer(_Lambda(lambda m, x: torch.cumsum(x, 1))).eval()
    torch.export.save(torch.export.export(module, (torch.randn(2, 3),), strict=False), str(path))
    code, err = _cli(str(path), "-o", str(tmp_path / "o.mlir"))
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"{path}:head.1 node 'cumsum'")
    assert err.endswith("error: aten.cumsum.default: unsupported op\n")
    assert not (tmp_path / "o.mlir").exists()


def test_cli_not_a_torch_export(tmp_path: Path) -> None:
    path = tmp_path / "junk.pt2"
    path.write_bytes(b"PK\x03\x04 not a zip")
    code, err = _cli(str(path), "-o", str(tmp_path / "o.mlir"))
    assert code == 1 and err.startswith(f"{path}: error: not a torch.export program")
    assert err.count("\n") == 1


def test_cli_missing_pt2(tmp_path: Path) -> None:
    code, err = _cli(str(tmp_path / "nope.pt2"), "-o", str(tmp_path / "o.mlir"))
    assert (code, err) == (
        1,
        f"teeny-import: error: cannot read '{tmp_path / 'nope.pt2'}': no such file\n",
    )


class _Anchored(nn.Module):
    """Ultralytics' Detect head's habits: a lifted constant tensor (not a
    parameter or buffer) read by folds and as data, and a grid built from
    ``arange(...).type_as(x)``."""

    def __init__(self) -> None:
        super().__init__()
        self.c = torch.tensor([2.0, 3.0, 0.25])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.c[0].item()  # folded: the constant is known at import
        grid = torch.arange(x.shape[-1]).type_as(x) + 0.5  # a constant, typed like x
        return x * scale + grid + self.c[1:2] * self.c[2]


def test_lifted_constants_and_typed_aranges_fold() -> None:
    model = _Anchored().eval()
    x = torch.randn(2, 3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(model, (x,), strict=False)
    imported = import_exported(exported)
    ops = [op.name for op in imported.module.walk() if op.name.startswith("graph.")]
    # The select, item, arange, type_as and the constant products all folded.
    assert ops == [
        "graph.constant",
        "graph.mul",
        "graph.constant",
        "graph.add",
        "graph.constant",
        "graph.add",
    ]
    got = reference.run(imported.module, imported.weights, [x.numpy()])
    with torch.no_grad():
        assert_close(got, [model(x).numpy()], REDUCTION_TOL)
