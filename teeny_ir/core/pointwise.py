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
