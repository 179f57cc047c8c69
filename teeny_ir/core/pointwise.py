"""The pointwise table: one entry per elementwise graph op, the single place that
knows its math.

Each `Pointwise` entry gives, for the graph op it is keyed by (``graph.<name>``):

- ``numpy``: its semantics, ``numpy(np, *operands, **options) -> array`` in
  float64 (numpy is passed in, so this module imports only the standard library);
- ``triton``: its Triton expression over the operands ``x`` (and ``y``) and the
  shared ``@triton.jit`` helpers of `teeny_ir.kernels.triton_helpers`, as text;
- ``epilogue``: whether it may ride in a GEMM epilogue (a fused convolution's
  ``activation``), which only unary entries without options may (the fused
  op's ``activation`` is a bare keyword);
- ``options``: the op properties the semantics read (by attribute name on the op);
- ``derivative`` (unary) and ``vjp`` (binary): the backward, for training
  (`teeny_ir.autodiff`): a unary op's derivative in numpy, the semantics of
  ``graph.activation_grad``; a binary op's gradients as graph ops;
- ``derivative_triton`` (unary): that derivative as a Triton expression over ``x``
  (a function of the options where the entry has any), which the
  ``activation_grad`` family renders into its ``derivative`` slot;
- ``derivative_at_output`` (unary) and ``vjp_reads_output`` (binary): what the
  backward reads besides the operands (below).
- ``positive_domain``: the op is real only for a positive first operand (log),
  which the tests that draw random operands read.

Options travel with the entry: every reader takes them with `options_of` from the
op (a forward op's properties, or the values `graph.activation_grad` carries for
the op it differentiates), so an entry with options of its own needs no other edit.
`check_table` lists what is wrong with the entries (the conventions test asserts it
lists nothing); an entry without a backward still runs forward, and training
through it is a located error naming the entry.

Who reads it: the reference interpreter (semantics of every entry's op and of the
fused convolution's epilogue), fuse-epilogues (which ops it absorbs), the fused
convolution's verifier (which activations exist), the ``elementwise`` kernel
family (its ``OP``) and every epilogue-carrying template (its ``ACTIVATION``),
both rendered from ``triton``. Kernel IR names an entry by `spell` (its ``name``, plus
its option values); nothing assigns integer codes. Adding a pointwise op is its op class plus one entry here
(``docs/extending.md``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

Semantics = Callable[..., Any]
"""``(np, *operands, **options) -> array``: float64 in, float64 out."""
NO_ACTIVATION = "none"
"""The epilogue value of a GEMM that applies no activation."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A word option value: ASCII only, since it reaches kernel IR and emitted code."""
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number option value as `repr` writes a finite float (ASCII digits only:
``float()`` alone would also read ``'٣'`` and ``'1_0'``)."""
BinaryVjp = Callable[[Any, Any, Any, Any, Any], tuple[Any, Any]]
"""``(builder, x, y, out, g) -> (dx, dy)`` over SSA values (see `Pointwise.vjp`)."""


@dataclass(frozen=True)
class Pointwise:
    """One elementwise op: its semantics, its Triton expression and where it may go."""

    op: str
    """The graph op it describes, e.g. ``graph.silu``."""
    arity: int
    numpy: Semantics
    triton: str | Callable[[Mapping[str, Any]], str]
    """The Triton expression over ``x`` (and ``y``); a function of the options
    when the op has any (the values are literal numbers in the emitted kernel)."""
    epilogue: bool = False
    options: tuple[str, ...] = ()
    derivative: Semantics | None = None
    """Unary entries: ``(np, x, **options) -> d op(x) / dx`` in float64, PyTorch's
    backward formula (`graph.activation_grad` multiplies it by the incoming
    gradient)."""
    vjp: BinaryVjp | None = None
    """Binary entries: ``vjp(b, x, y, out, g) -> (dx, dy)``, the gradients before
    unbroadcasting, built with the autodiff builder ``b`` (its ``mul``, ``div``,
    ``neg``... methods; `teeny_ir.autodiff.context.VjpContext`)."""
    derivative_triton: str | Callable[[Mapping[str, Any]], str] | None = None
    """Unary entries: ``derivative`` as a Triton expression over ``x`` (as
    ``triton``), rendered into the ``activation_grad`` family's kernel. No
    intermediate overflows or is an invalid operation where the derivative is
    an ordinary number."""
    derivative_at_output: bool = False
    """Unary entries whose derivative is the same function of the output as of
    the input (relu: ``[x > 0] = [relu(x) > 0]``, NaN included): a backward may
    evaluate it on the kept output instead of recomputing the input (a fused
    product's pre-activation)."""
    vjp_reads_output: bool = False
    """Binary entries whose ``vjp`` reads ``out`` (div: ``-(g / y) * out``), so the
    backward must keep or recompute the op's result; the others get it unread."""
    positive_domain: bool = False
    """Entries that are real (not NaN) only for a positive first operand (log,
    sqrt; pow's base, under a non-integer exponent): the tests that draw random
    operands draw that one positive for them."""

    @property
    def name(self) -> str:
        """The op name without its dialect (``silu``): how kernel IR names the entry."""
        return self.op.removeprefix("graph.")

    def evaluate(self, np: ModuleType, operands: list[Any], options: Mapping[str, Any]) -> Any:
        """The op's value on float64 ``operands`` (numpy passed in). NaN and +-inf
        propagate as in PyTorch and IEEE arithmetic, silently: an overflow, a
        division by zero or an invalid operation (``inf - inf``, ``-inf * 0``) is
        the answer, not a warning."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return self.numpy(np, *(np.asarray(a, np.float64) for a in operands), **options)

    def expression(self, options: Mapping[str, Any]) -> str:
        """The Triton expression, with the option values (if any) filled in."""
        return self.triton if isinstance(self.triton, str) else self.triton(options)

    def derivative_expression(self, options: Mapping[str, Any]) -> str:
        """The Triton expression of the derivative, with the option values filled in."""
        if self.derivative_triton is None:
            raise ValueError(f"pointwise '{self.op}' has no Triton derivative")
        if isinstance(self.derivative_triton, str):
            return self.derivative_triton
        return self.derivative_triton(options)


def _logistic(np: ModuleType, x: Any) -> Any:
    """1 / (1 + exp(-x)) computing only ``exp(-|x|)``, so it never overflows."""
    small = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))


def _erf(np: ModuleType, x: Any) -> Any:
    """Elementwise erf in float64 (numpy has none; scipy is no dependency)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _divide(np: ModuleType, x: Any, y: Any) -> Any:
    """IEEE division: ``x / 0`` is ``±inf`` and ``0 / 0`` is ``nan``, without warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(x, y)


def _gelu(np: ModuleType, x: Any, approximate: str) -> Any:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(np, x / math.sqrt(2.0)))


def _gelu_derivative(np: ModuleType, x: Any, approximate: str) -> Any:
    """PyTorch's ``gelu_backward`` factor (``GeluKernel.cpp``)."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2.0 / math.pi), 0.044715
        inner = np.tanh(beta * (x + kappa * x**3))
        left, right = 0.5 * x, 1.0 + inner
        return 0.5 * right + left * (1.0 - inner * inner) * beta * (1.0 + 3.0 * kappa * x * x)
    cdf = 0.5 * (1.0 + _erf(np, x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return cdf + x * pdf


def _silu_derivative(np: ModuleType, x: Any) -> Any:
    s = _logistic(np, x)
    return s * (1.0 + x * (1.0 - s))


def _sigmoid_derivative(np: ModuleType, x: Any) -> Any:
    s = _logistic(np, x)
    return s * (1.0 - s)


def _div_vjp(b: Any, x: Any, y: Any, out: Any, g: Any) -> tuple[Any, Any]:
    """d(x / y): ``g / y`` and ``-g * x / y**2 = -(g / y) * out``."""
    dx = b.div(g, y)
    return dx, b.neg(b.mul(dx, out))


def _gelu_triton(options: Mapping[str, Any]) -> str:
    if options.get("approximate") == "tanh":
        # gelu_tanh_arg: sqrt(2/pi) * (x + 0.044715 x^3) with the cube kept from overflowing.
        return "0.5 * x * (1.0 + tanh_stable(gelu_tanh_arg(x)))"
    return f"0.5 * x * (1.0 + tl.math.erf(x * {1.0 / math.sqrt(2.0)!r}))"


def _nan_at_inf(template: str) -> str:
    """``template`` (an expression over ``{x}``) over x with +-inf replaced by 0,
    and NaN at +-inf: the derivatives of silu and gelu there are ``inf * 0 = nan``
    (as the reference's), which this gives without an invalid operation (that
    Triton's interpreter, numpy, would warn about)."""
    finite = 'tl.where(tl.abs(x) == float("inf"), 0.0, x)'
    return f'tl.where(tl.abs(x) == float("inf"), float("nan"), {template.format(x=finite)})'


def _gelu_derivative_triton(options: Mapping[str, Any]) -> str:
    if options.get("approximate") == "tanh":
        # 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 kappa c^2), t = tanh(gelu_tanh_arg(x)),
        # c = x clamped to [-10, 10]: past 10, 1 - t^2 is exactly 0 in f32, and c^2 never
        # overflows.
        c = "tl.minimum(tl.maximum({x}, -10.0), 10.0)"
        t = "tanh_stable(gelu_tanh_arg({x}))"
        return _nan_at_inf(
            f"0.5 * (1.0 + {t}) + 0.5 * {{x}} * (1.0 - {t} * {t}) * 0.7978845608028654"
            f" * (1.0 + 0.134145 * {c} * {c})"
        )
    # cdf + x * pdf, the pdf's square over x clamped to [-20, 20] (exp(-200) is 0 in f32).
    c = "tl.minimum(tl.maximum({x}, -20.0), 20.0)"
    return _nan_at_inf(
        f"0.5 * (1.0 + tl.math.erf({{x}} * {1.0 / math.sqrt(2.0)!r})) "
        f"+ {{x}} * (tl.exp(-0.5 * {c} * {c}) * {1.0 / math.sqrt(2.0 * math.pi)!r})"
    )


def _leaky_relu_derivative_triton(options: Mapping[str, Any]) -> str:
    return f"tl.where(x > 0, 1.0, {float(options['negative_slope'])!r})"


def _leaky_relu_triton(options: Mapping[str, Any]) -> str:
    # The slope multiplies only x < 0 (and NaN): slope * x on the other lanes could
    # overflow or be 0 * inf, which numpy (Triton's interpreter) warns about.
    slope = float(options["negative_slope"])
    return f"tl.where(x >= 0, x, {slope!r} * tl.where(x >= 0, 0.0, x))"


def _hardtanh_triton(options: Mapping[str, Any]) -> str:
    low, high = float(options["min_val"]), float(options["max_val"])
    return f"tl.where(x < {low!r}, {low!r}, tl.where(x > {high!r}, {high!r}, x))"


def _hardtanh_derivative_triton(options: Mapping[str, Any]) -> str:
    low, high = float(options["min_val"]), float(options["max_val"])
    return f"tl.where((x <= {low!r}) | (x >= {high!r}), 0.0, 1.0)"


_EXP_MAX = 88.72283172607422
"""The largest float32 whose ``exp`` is finite (above it, exp overflows to inf)."""
_RECIPROCAL_MIN = 2.938737278354183e-39
"""The smallest float32 magnitude whose reciprocal is finite."""
_SQUARED_RECIPROCAL_MIN = 5.421011508662376e-20
"""The smallest float32 magnitude whose reciprocal squares to a finite float32."""
_LOG_F32_INF = 88.72283908187066
"""Just below the log of the float64 magnitude (3.4028235677973366e38) from which
rounding to float32 gives inf."""


def _signed_inf(x: str) -> str:
    """Triton: +-inf with the sign bit of ``x`` (``1 / x`` at ``x = +-0``, read
    without dividing by zero)."""
    return f'tl.where({x}.to(tl.int32, bitcast=True) < 0, float("-inf"), float("inf"))'


def _exp_triton(x: str) -> str:
    """Triton: ``exp(x)``, inf above `_EXP_MAX` without computing an overflow."""
    big = f"({x} > {_EXP_MAX!r})"
    return f'tl.where({big}, float("inf"), tl.exp(tl.where({big}, 0.0, {x})))'


def _reciprocal_triton(x: str) -> str:
    """Triton: ``1 / x`` (+-inf at +-0 and wherever it overflows), computed only
    where it is finite, so neither a division by zero nor an overflow happens."""
    tiny = f"(tl.abs({x}) < {_RECIPROCAL_MIN!r})"
    return f"tl.where({tiny}, {_signed_inf(x)}, 1.0 / tl.where({tiny}, 1.0, {x}))"


def _expm1_nonpositive(n: str) -> str:
    """Triton: ``exp(n) - 1`` for ``n <= 0`` (or NaN), accurate near 0 (Kahan's
    ``(u - 1) * n / log(u)``, ``u = exp(n)``; there is no libdevice ``expm1`` in the
    interpreter): ``n`` itself where ``u`` rounds to 1, -1 where ``u - 1`` does."""
    d = f"(tl.exp({n}) - 1.0)"
    exact = f"(({d} == 0.0) | ({d} == -1.0))"
    # Kahan's quotient only off those lanes: there n lies in (-18, 0) and log(u) < 0.
    n_off = f"tl.where({exact}, 0.0, {n})"
    u_off = f"tl.where({exact}, 0.5, tl.exp({n}))"
    return (
        f"tl.where({d} == 0.0, {n}, tl.where({d} == -1.0, -1.0, {d} * {n_off} / tl.log({u_off})))"
    )


def _log1p_unit(z: str) -> str:
    """Triton: ``log(1 + z)`` for ``z`` in [0, 1] (or NaN), accurate for tiny ``z``
    (Goldberg's ``log(u) * z / (u - 1)``, ``u = 1 + z``; ``z`` where ``u`` rounds to 1)."""
    u = f"(1.0 + {z})"
    one = f"({u} == 1.0)"
    return f"tl.where({one}, {z}, tl.log({u}) * ({z} / tl.where({one}, 1.0, {u} - 1.0)))"


def _finite_only(function: str) -> str:
    """Triton: ``function`` (``tl.sin``) at ``x``, NaN at +-inf without evaluating
    it there (sin and cos of an infinity are an invalid operation)."""
    return f'{function}(tl.where(tl.abs(x) == float("inf"), float("nan"), x))'


def _nan_at_zero(template: str) -> str:
    """A derivative that is infinite at ``x = 0`` (log, sqrt, reciprocal), as NaN
    there: the ``activation_grad`` kernel multiplies the derivative by ``dy``,
    and its masked-off lanes load ``x = 0`` and ``dy = 0``, where ``inf * 0``
    would be an invalid operation (PyTorch's gradient there is ``inf * dy``,
    NaN only where ``dy = 0``). `_nan_at_zero_np` is the numpy side."""
    return f'tl.where(x == 0, float("nan"), {template})'


def _nan_at_zero_np(np: ModuleType, x: Any, value: Any) -> Any:
    """``value`` (a derivative at ``x``) with NaN where ``x == 0`` (`_nan_at_zero`)."""
    return np.where(x == 0, np.nan, value)


def _log_triton() -> str:
    # log only of positive x: log(0) = -inf and log(x < 0) = nan are written, not computed.
    special = 'tl.where(x == 0, float("-inf"), tl.where(x < 0, float("nan"), x))'
    return f"tl.where(x > 0, tl.log(tl.where(x > 0, x, 1.0)), {special})"


def _sqrt_derivative_triton() -> str:
    # PyTorch's grad / (2 * sqrt(x)), nan below 0 (and at 0: `_nan_at_zero`).
    root = 'tl.sqrt_rn(tl.where(x <= 0, float("nan"), x))'
    return _nan_at_zero(f"0.5 / {root}")


def _reciprocal_derivative_triton() -> str:
    # PyTorch's -grad * (1 / x)^2: -inf where the square overflows (NaN at 0:
    # `_nan_at_zero`).
    tiny = f"(tl.abs(x) < {_SQUARED_RECIPROCAL_MIN!r})"
    r = f"(1.0 / tl.where({tiny}, 1.0, x))"
    return _nan_at_zero(f'tl.where({tiny}, float("-inf"), -({r} * {r}))')


def _elu(np: ModuleType, x: Any, alpha: float) -> Any:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _elu_triton(options: Mapping[str, Any]) -> str:
    # alpha multiplies expm1 of the non-positive part only: bounded by |alpha|.
    alpha = float(options["alpha"])
    return f"tl.where(x > 0, x, {alpha!r} * {_expm1_nonpositive('tl.where(x > 0, 0.0, x)')})"


def _elu_derivative_triton(options: Mapping[str, Any]) -> str:
    # PyTorch's elu_backward: alpha * exp(x) where x <= 0, else 1 (NaN included).
    alpha = float(options["alpha"])
    return f"tl.where(x <= 0, {alpha!r} * tl.exp(tl.where(x <= 0, x, 0.0)), 1.0)"


def _celu(np: ModuleType, x: Any, alpha: float) -> Any:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0) * (1.0 / alpha)))


def _celu_scaled(options: Mapping[str, Any]) -> tuple[float, str]:
    """alpha and ``x / alpha`` over the lanes where ``x`` is not positive (0 on the
    others, NaN kept), with ``x`` first clamped to ``-100 alpha`` (past which
    expm1 is -1 and exp 0 in float32) so that the scaling by ``1 / alpha``
    cannot overflow."""
    alpha = float(options["alpha"])
    floor = -100.0 * alpha
    kept = "tl.where(x > 0, 0.0, x)"
    return alpha, f"(tl.where({kept} < {floor!r}, {floor!r}, {kept}) * {1.0 / alpha!r})"


def _celu_triton(options: Mapping[str, Any]) -> str:
    alpha, n = _celu_scaled(options)
    return f"tl.where(x > 0, x, {alpha!r} * {_expm1_nonpositive(n)})"


def _celu_derivative_triton(options: Mapping[str, Any]) -> str:
    # PyTorch's elu_backward with input_scale 1 / alpha: exp(x / alpha) where x <= 0.
    _, n = _celu_scaled(options)
    return f"tl.where(x <= 0, tl.exp({n}), 1.0)"


def _softplus(np: ModuleType, x: Any) -> Any:
    """log(1 + exp(x)) as ``max(x, 0) + log1p(exp(-|x|))``, which never overflows."""
    return np.where(x > 0, x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _softsign_derivative(np: ModuleType, x: Any) -> Any:
    # PyTorch differentiates x / (1 + |x|) by autograd: at +-inf that is inf / inf = nan.
    return np.where(np.isinf(x), np.nan, (1.0 / (1.0 + np.abs(x))) ** 2)


def _extremum_vjp(b: Any, x: Any, y: Any, g: Any) -> tuple[Any, Any, Any]:
    """``g`` where ``x > y``, ``g`` where ``x < y``, and the rest of ``g`` (ties,
    and where an operand is NaN), with the masks as relu derivatives of ``x - y``
    and ``y - x`` (no comparison op is needed)."""
    above = b.activation_grad(b.sub(x, y), g, "relu")
    below = b.activation_grad(b.sub(y, x), g, "relu")
    return above, below, b.sub(b.sub(g, above), below)


def _maximum_vjp(b: Any, x: Any, y: Any, out: Any, g: Any) -> tuple[Any, Any]:
    """PyTorch's: ``g`` to the larger operand, half of it to each on a tie
    (``inf`` and ``inf`` included); where an operand is NaN, half to each too
    (PyTorch gives ``g`` to both there; ``x - y`` is NaN for both cases)."""
    above, below, rest = _extremum_vjp(b, x, y, g)
    half = b.scale(rest, 0.5)
    return b.add(above, half), b.add(below, half)


def _minimum_vjp(b: Any, x: Any, y: Any, out: Any, g: Any) -> tuple[Any, Any]:
    """PyTorch's: ``g`` to the smaller operand, half to each on a tie (as maximum)."""
    above, below, rest = _extremum_vjp(b, x, y, g)
    half = b.scale(rest, 0.5)
    return b.add(below, half), b.add(above, half)


def _pow_vjp(b: Any, x: Any, y: Any, out: Any, g: Any) -> tuple[Any, Any]:
    """PyTorch's ``pow_backward_self`` and ``pow_backward_exponent``:
    ``dx = g * y * x^(y - 1)``, 0 where ``y == 0``; ``dy = g * out * log(x)``, 0
    where ``x == 0`` and ``y >= 0``. The masks come from ``0^a`` (1 where ``a == 0``,
    else 0): the exponent ``y - 1`` becomes 0 where ``y == 0`` (so ``x^0 = 1``
    however ``x`` is, and ``dx = g * 0``), and ``x`` becomes 1 where ``dy`` is
    masked (``log(1) = 0``). Where an operand is NaN both gradients are NaN
    (PyTorch's too, but for ``dy`` at ``x = 1``, which it gives as 0)."""
    zero = b.constant(0.0)
    exponent = b.add(b.sub(y, b.constant(1.0)), b.pow(zero, b.abs(y)))
    dx = b.mul(g, b.mul(y, b.pow(x, exponent)))
    masked = b.pow(zero, b.add(b.abs(x), b.relu(b.neg(y))))
    dy = b.mul(g, b.mul(out, b.log(b.add(x, masked))))
    return dx, dy


def _pow_triton() -> str:
    """``x ** y`` as C's ``pow`` (PyTorch's): ``|x|^y = exp(y log|x|)`` in float64,
    so the float32 result is correctly rounded almost always (``x ** 1`` is
    ``x``), with the sign of an odd integer power of a negative ``x`` (-0.0
    included, read from the sign bit), 1 where ``y == 0`` or ``x == 1`` (NaN
    included), NaN for a finite negative ``x`` and a non-integer ``y``. Nothing
    is an IEEE exception on the way: ``log 0`` is written as -inf, ``y`` is
    clamped to +-1e30 (the same results: ``|log|x|| >= 6e-8`` unless ``x`` is +-1),
    and where ``y log|x|`` exceeds `_LOG_F32_INF` the result is written as inf
    rather than rounded to float32 from a larger float64."""
    ax = "tl.abs(x).to(tl.float64)"
    log_ax = f'tl.where({ax} == 0, float("-inf"), tl.log(tl.where({ax} == 0, 1.0, {ax})))'
    yc = "tl.where(tl.abs(y) > 1e30, tl.where(y > 0, 1e30, -1e30), y)"
    t = f"({yc}.to(tl.float64) * tl.where(y == 0, 0.0, {log_ax}))"
    big = f"({t} > {_LOG_F32_INF!r})"
    magnitude = f'tl.where({big}, float("inf"), tl.exp(tl.where({big}, 0.0, {t})).to(tl.float32))'
    negative = "(x.to(tl.int32, bitcast=True) < 0)"
    integer = f"(tl.floor({yc}) == {yc})"
    odd = f"({integer} & (tl.floor({yc} * 0.5) * 2.0 != {yc}))"
    invalid = f'({negative} & (tl.abs(x) != float("inf")) & (x != 0) & ~{integer})'
    signed = f"{magnitude} * tl.where({negative} & {odd}, -1.0, 1.0)"
    return f'tl.where((y == 0) | (x == 1), 1.0, tl.where({invalid}, float("nan"), {signed}))'


TABLE: tuple[Pointwise, ...] = (
    Pointwise(
        "graph.silu",
        1,
        lambda np, x: x * _logistic(np, x),
        "x * logistic(x)",
        epilogue=True,
        derivative=_silu_derivative,
        derivative_triton=_nan_at_inf("logistic({x}) * (1.0 + {x} * (1.0 - logistic({x})))"),
    ),
    # x < 0 ? 0 : x keeps NaN (tl.maximum would not: it is fmax in the interpreter).
    # PyTorch's threshold_backward: the gradient passes where x > 0 (not at 0, not NaN).
    Pointwise(
        "graph.relu",
        1,
        lambda np, x: np.maximum(x, 0.0),
        "tl.where(x < 0, 0.0, x)",
        True,
        derivative=lambda np, x: np.where(x > 0, 1.0, 0.0),
        derivative_triton="tl.where(x > 0, 1.0, 0.0)",
        derivative_at_output=True,
    ),
    Pointwise(
        "graph.sigmoid",
        1,
        _logistic,
        "logistic(x)",
        epilogue=True,
        derivative=_sigmoid_derivative,
        derivative_triton="logistic(x) * (1.0 - logistic(x))",
    ),
    Pointwise(
        "graph.tanh",
        1,
        lambda np, x: np.tanh(x),
        "tanh_stable(x)",
        epilogue=True,
        derivative=lambda np, x: 1.0 - np.tanh(x) ** 2,
        derivative_triton="1.0 - tanh_stable(x) * tanh_stable(x)",
    ),
    # PyTorch's hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3, 1 above (and at NaN).
    Pointwise(
        "graph.hardswish",
        1,
        lambda np, x: x * (np.clip(x + 3.0, 0.0, 6.0) / 6.0),
        "x * (tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0)",
        epilogue=True,
        derivative=lambda np, x: np.where(x < -3.0, 0.0, np.where(x <= 3.0, x / 3.0 + 0.5, 1.0)),
        derivative_triton="tl.where(x < -3.0, 0.0, tl.where(x <= 3.0, x / 3.0 + 0.5, 1.0))",
    ),
    Pointwise(
        "graph.gelu",
        1,
        _gelu,
        _gelu_triton,
        options=("approximate",),
        derivative=_gelu_derivative,
        derivative_triton=_gelu_derivative_triton,
    ),
    Pointwise(
        "graph.leaky_relu",
        1,
        lambda np, x, negative_slope: np.where(x >= 0, x, negative_slope * x),
        _leaky_relu_triton,
        options=("negative_slope",),
        # PyTorch's leaky_relu_backward: x > 0 ? 1 : negative_slope.
        derivative=lambda np, x, negative_slope: np.where(x > 0, 1.0, negative_slope),
        derivative_triton=_leaky_relu_derivative_triton,
    ),
    # PyTorch's hardtanh keeps NaN, and its backward passes the gradient unless
    # x <= min_val or x >= max_val (so NaN passes it too).
    Pointwise(
        "graph.hardtanh",
        1,
        lambda np, x, min_val, max_val: np.where(
            x < min_val, min_val, np.where(x > max_val, max_val, x)
        ),
        _hardtanh_triton,
        options=("min_val", "max_val"),
        derivative=lambda np, x, min_val, max_val: np.where(
            (x <= min_val) | (x >= max_val), 0.0, 1.0
        ),
        derivative_triton=_hardtanh_derivative_triton,
    ),
    # PyTorch's abs backward is sgn(x): 0 at 0, and 0 at NaN.
    Pointwise(
        "graph.abs",
        1,
        lambda np, x: np.abs(x),
        "tl.abs(x)",
        derivative=lambda np, x: np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0)),
        derivative_triton="tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))",
    ),
    Pointwise(
        "graph.neg",
        1,
        lambda np, x: -x,
        "-x",
        derivative=lambda np, x: np.full_like(x, -1.0),
        derivative_triton="-1.0",
    ),
    Pointwise(
        "graph.exp",
        1,
        lambda np, x: np.exp(x),
        _exp_triton("x"),
        derivative=lambda np, x: np.exp(x),
        derivative_triton=_exp_triton("x"),
    ),
    # PyTorch's log backward: grad / x (NaN at 0: `_nan_at_zero`).
    Pointwise(
        "graph.log",
        1,
        lambda np, x: np.log(x),
        _log_triton(),
        derivative=lambda np, x: _nan_at_zero_np(np, x, _divide(np, 1.0, x)),
        derivative_triton=_nan_at_zero(_reciprocal_triton("x")),
        positive_domain=True,
    ),
    # sqrt(-0) = -0, sqrt(x < 0) = nan; the square root is the correctly rounded one.
    Pointwise(
        "graph.sqrt",
        1,
        lambda np, x: np.sqrt(x),
        'tl.sqrt_rn(tl.where(x < 0, float("nan"), x))',
        derivative=lambda np, x: _nan_at_zero_np(np, x, _divide(np, 0.5, np.sqrt(x))),
        derivative_triton=_sqrt_derivative_triton(),
        positive_domain=True,
    ),
    Pointwise(
        "graph.reciprocal",
        1,
        lambda np, x: _divide(np, 1.0, x),
        _reciprocal_triton("x"),
        derivative=lambda np, x: _nan_at_zero_np(np, x, -(_divide(np, 1.0, x) ** 2)),
        derivative_triton=_reciprocal_derivative_triton(),
    ),
    # d erf = 2 / sqrt(pi) exp(-x^2), x^2 over |x| clamped to 10 (exp(-100) is 0 in f32).
    Pointwise(
        "graph.erf",
        1,
        _erf,
        "tl.math.erf(x)",
        derivative=lambda np, x: (2.0 / math.sqrt(math.pi)) * np.exp(-x * x),
        derivative_triton=(
            f"{2.0 / math.sqrt(math.pi)!r}"
            " * tl.exp(-tl.where(tl.abs(x) > 10.0, 10.0, x) * tl.where(tl.abs(x) > 10.0, 10.0, x))"
        ),
    ),
    # ONNX's log(1 + exp(x)); PyTorch's softplus_backward (beta 1, threshold 20):
    # sigmoid(x), 1 above 20.
    Pointwise(
        "graph.softplus",
        1,
        _softplus,
        f"tl.where(x > 0, x, 0.0) + {_log1p_unit('tl.exp(-tl.abs(x))')}",
        derivative=lambda np, x: np.where(x > 20.0, 1.0, _logistic(np, x)),
        derivative_triton="tl.where(x > 20.0, 1.0, logistic(x))",
    ),
    Pointwise(
        "graph.elu",
        1,
        _elu,
        _elu_triton,
        options=("alpha",),
        derivative=lambda np, x, alpha: np.where(x <= 0, alpha * np.exp(np.minimum(x, 0.0)), 1.0),
        derivative_triton=_elu_derivative_triton,
    ),
    Pointwise(
        "graph.celu",
        1,
        _celu,
        _celu_triton,
        options=("alpha",),
        derivative=lambda np, x, alpha: np.where(
            x <= 0, np.exp(np.minimum(x, 0.0) * (1.0 / alpha)), 1.0
        ),
        derivative_triton=_celu_derivative_triton,
    ),
    # x / (1 + |x|): nan at +-inf (inf / inf), as PyTorch's, written rather than computed.
    Pointwise(
        "graph.softsign",
        1,
        lambda np, x: x / (1.0 + np.abs(x)),
        _nan_at_inf("{x} / (1.0 + tl.abs({x}))"),
        derivative=_softsign_derivative,
        derivative_triton=_nan_at_inf("(1.0 / (1.0 + tl.abs({x}))) * (1.0 / (1.0 + tl.abs({x})))"),
    ),
    Pointwise(
        "graph.sin",
        1,
        lambda np, x: np.sin(x),
        _finite_only("tl.sin"),
        derivative=lambda np, x: np.cos(x),
        derivative_triton=_finite_only("tl.cos"),
    ),
    Pointwise(
        "graph.cos",
        1,
        lambda np, x: np.cos(x),
        _finite_only("tl.cos"),
        derivative=lambda np, x: -np.sin(x),
        derivative_triton=f"-{_finite_only('tl.sin')}",
    ),
    Pointwise("graph.add", 2, lambda np, x, y: x + y, "x + y", vjp=lambda b, x, y, o, g: (g, g)),
    Pointwise(
        "graph.sub", 2, lambda np, x, y: x - y, "x - y", vjp=lambda b, x, y, o, g: (g, b.neg(g))
    ),
    Pointwise(
        "graph.mul",
        2,
        lambda np, x, y: x * y,
        "x * y",
        vjp=lambda b, x, y, o, g: (b.mul(g, y), b.mul(g, x)),
    ),
    Pointwise("graph.div", 2, _divide, "x / y", vjp=_div_vjp, vjp_reads_output=True),
    # NaN propagates from either operand (torch.maximum; tl.maximum would drop it).
    Pointwise(
        "graph.maximum",
        2,
        lambda np, x, y: np.maximum(x, y),
        "tl.where((x < y) | (y != y), y, x)",
        vjp=_maximum_vjp,
    ),
    Pointwise(
        "graph.minimum",
        2,
        lambda np, x, y: np.minimum(x, y),
        "tl.where((y < x) | (y != y), y, x)",
        vjp=_minimum_vjp,
    ),
    Pointwise(
        "graph.pow",
        2,
        lambda np, x, y: np.power(x, y),
        _pow_triton(),
        vjp=_pow_vjp,
        vjp_reads_output=True,
        positive_domain=True,
    ),
)

BY_OP: dict[str, Pointwise] = {entry.op: entry for entry in TABLE}
"""Graph op name -> its entry."""
BY_NAME: dict[str, Pointwise] = {entry.name: entry for entry in TABLE}
"""Entry name (as kernel IR spells it) -> its entry."""


def epilogue_names() -> tuple[str, ...]:
    """The activations a GEMM epilogue (and `graph.fused_conv2d`) accepts."""
    return tuple(entry.name for entry in TABLE if entry.epilogue)


def lookup(op_name: str) -> Pointwise | None:
    """The entry of graph op ``op_name`` (``graph.silu``), if it is pointwise."""
    return BY_OP.get(op_name)


def derivative_at_output(name: str) -> bool:
    """Whether the entry named ``name`` (an epilogue's activation; ``none`` is not
    one) may take its derivative at the output (`Pointwise.derivative_at_output`)."""
    entry = BY_NAME.get(name)
    return entry is not None and entry.derivative_at_output


def options_of(entry: Pointwise, op: object) -> dict[str, Any]:
    """The option values of ``entry`` on ``op``: the values ``op`` carries for the
    entry it stands for (``carried_options()``: `graph.activation_grad`), else the
    properties of that name on ``op`` (the entry's own graph op)."""
    carried = getattr(op, "carried_options", None)
    if callable(carried):
        values: dict[str, Any] = carried()
        return {name: values[name] for name in entry.options}
    return {name: getattr(op, name) for name in entry.options}


def spell(entry: Pointwise, options: Mapping[str, Any]) -> str:
    """How kernel IR names ``entry`` with its option values: ``silu``, or
    ``leaky_relu(negative_slope=0.2)`` (floats by ``repr``, words as they are)."""
    if not entry.options:
        return entry.name
    values = ", ".join(f"{name}={_option_text(options[name])}" for name in entry.options)
    return f"{entry.name}({values})"


def _option_text(value: Any) -> str:
    if isinstance(value, str) and _WORD.fullmatch(value):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return repr(float(value))
    raise ValueError(f"option value {value!r} is neither a word nor a finite number")


def parse_spelling(text: str) -> tuple[Pointwise, dict[str, Any]]:
    """The entry and option values that `spell` wrote (raises ValueError naming
    what is wrong). Option values come back as floats or identifier words."""
    name, _, rest = text.partition("(")
    entry = BY_NAME.get(name)
    if entry is None:
        raise ValueError(f"'{name}' is not an entry of the pointwise table")
    options: dict[str, Any] = {}
    if rest:
        if not rest.endswith(")"):
            raise ValueError(f"'{text}' is not name(option=value, ...)")
        for item in rest[:-1].split(","):
            key, equals, value = (part.strip() for part in item.partition("="))
            if not equals or key not in entry.options or key in options:
                raise ValueError(f"'{text}': unexpected option '{key}'")
            options[key] = _parse_option(value)
    missing = [o for o in entry.options if o not in options]
    if missing:
        raise ValueError(f"'{text}' lacks option(s) {', '.join(missing)} of '{name}'")
    return entry, options


def _parse_option(text: str) -> Any:
    if _WORD.fullmatch(text):
        return text
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"option value '{text}' is neither a word nor a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"option value '{text}' is not finite")
    return value


def check_table(table: Sequence[Pointwise] = TABLE) -> list[str]:
    """What is wrong with the entries of ``table``, one line per problem naming the
    entry; empty for a sound table. Run by the conventions test, never at import:
    a bad entry is a named test failure, not a crash of every tool."""
    problems: list[str] = []
    seen: set[str] = set()
    for entry in table:
        where = f"pointwise entry '{entry.op}'"
        if not entry.op.startswith("graph.") or not entry.name.isidentifier():
            problems.append(f"{where} is not named graph.<identifier>")
        if entry.name in seen or entry.name == NO_ACTIVATION:
            problems.append(f"{where}: names must be distinct and not '{NO_ACTIVATION}'")
        seen.add(entry.name)
        if entry.arity not in (1, 2):
            problems.append(f"{where} has arity {entry.arity}, not 1 or 2")
        if entry.epilogue and (entry.arity != 1 or entry.options):
            problems.append(f"{where}: only unary ops without options may ride in an epilogue")
        if entry.arity == 1:
            if entry.derivative is None or entry.derivative_triton is None:
                problems.append(
                    f"{where} needs a derivative and a derivative_triton (its backward)"
                )
            if entry.vjp is not None or entry.vjp_reads_output:
                problems.append(f"{where}: vjp and vjp_reads_output are for binary ops")
        if entry.arity == 2:
            if entry.vjp is None:
                problems.append(f"{where} needs a vjp (its backward)")
            if entry.derivative is not None or entry.derivative_triton is not None:
                problems.append(f"{where}: derivative and derivative_triton are for unary ops")
            if entry.derivative_at_output:
                problems.append(f"{where}: derivative_at_output is for unary ops")
        for option in entry.options:
            if not option.isidentifier() or option == "activation":
                problems.append(
                    f"{where}: option '{option}' is not an identifier other than 'activation'"
                )
    return problems
