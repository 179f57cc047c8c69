"""The one contract validator: proves a kernel launch safe to run.

The kernel dialect's verifier, the plan loader, the emitter, AOT and the
runtime all describe a launch as a `LaunchContract` and call `validate`; none of
them re-implements a check. Given the family's contract, it proves, for every
batch size asked (1..64 when verifying; the actual batch at run time):

- the constexprs are the family's, within their bounds, and every block (a
  product of constexprs the family names) holds at most 2**20 elements;
- ``num_warps`` is a power of two in 1..32 and ``num_stages`` >= 1;
- every dim argument evaluates, and i32 ones stay in [0, 2**31 - 1];
- the dim arguments the bound tensors' shapes imply take exactly those values;
- each pointer argument's footprint (the family's expression of the dims) fits
  inside the tensor bound to it; a batch-strided view (``strides``) binds only to
  a pointer whose family names its batch-stride dim, which must equal the
  view's stride, and its span is ``(B - 1) * stride + image``;
- each grid axis launches between the programs the tile model needs and the
  hardware limit.

Results are memoised on the whole contract (a frozen, hashable value) with its
tensors renamed by first use (`canonical`), so a graph of many identical
blocks is proven once per distinct launch, and a launch the kernel dialect
verified is not proven again when the plan that names its tensors otherwise is
loaded. Messages
are single sentences; callers add where (an op's location, a plan launch).

Over a range of batches (1..64 when verifying), launches are proven
symbolically instead of batch by batch (`_proven_over_range`): every dim, shape
entry, grid expression and footprint is put in a normal form ``a + b*B + m *
floordiv(r + s*B, t)`` (`_Form`: ``s > 0``; ``m = 0`` where there is no
division), exact on the range and monotone in ``B`` where ``b`` and ``m`` do not
differ in sign, so a bound that holds at both ends of the range holds on all of
it, and an affine difference that is zero at both ends is zero throughout. The
family's ``implied`` dims (a Python function of concrete shapes) are still
checked at every batch, computed once for all the launches over tensors of the
same shapes. Whatever the normal form cannot express (a product of two
batch-dependent terms, a quotient or an extremum the range does not pin down)
or does not prove, and every failure, goes to the batch-by-batch proof
(`_prove_at`), which stays the definition and gives the message: the symbolic
proof only ever says "proven". Only the standard library is imported.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teeny_ir.core import expressions
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.contract import (
    MAX_BLOCK_ELEMENTS,
    MAX_GRID,
    MAX_NUM_WARPS,
    POINTER_KINDS,
    Implied,
    KernelFamily,
    constexpr_problem,
)
from teeny_ir.kernels.families import FAMILIES

COVERAGE_BATCHES = tuple(range(1, 65))
"""Batch sizes for which a launch is proven when it is verified."""
MAX_I32 = 2**31 - 1

Dim = int | str
"""A tensor dimension: a size, or an expression over the batch ``B``."""


class ContractError(ValueError):
    """A launch that breaks its family's contract (one sentence)."""


@dataclass(frozen=True)
class LaunchContract:
    """One launch, as every caller describes it.

    ``args`` pairs each ABI argument, in order, with its binding: for a pointer,
    the key of a tensor in ``tensors``; otherwise an expression over ``B``.
    ``tensors`` gives the shape of every tensor a pointer may be bound to."""

    family: str
    constexprs: tuple[tuple[str, int | str], ...]
    args: tuple[tuple[str, str], ...]
    tensors: tuple[tuple[str, tuple[Dim, ...]], ...]
    grid: tuple[str, ...]
    num_warps: int
    num_stages: int
    strides: tuple[tuple[str, int], ...] = ()
    """The batch stride of each tensor in ``tensors`` that is a batch-strided
    view (images ``stride`` elements apart, each contiguous); the others are
    contiguous."""


def family_of(name: str) -> KernelFamily:
    family = FAMILIES.get(name)
    if family is None:
        raise ContractError(f"unknown kernel family '{name}' (known: {', '.join(sorted(FAMILIES))})")
    return family


def check_constexprs(family: KernelFamily, values: Mapping[str, int | str]) -> None:
    """The constexprs are exactly the family's, each valid, and every block fits."""
    expected = [c.name for c in family.constexprs]
    for name in values:
        if name not in expected:
            raise ContractError(
                f"family '{family.name}' has no constexpr '{name}' "
                f"(its constexprs: {', '.join(expected)})"
            )
    for constexpr in family.constexprs:
        if constexpr.name not in values:
            raise ContractError(f"missing constexpr '{constexpr.name}' of family '{family.name}'")
        problem = constexpr_problem(constexpr, values[constexpr.name])
        if problem is not None:
            raise ContractError(problem)
    for block in family.blocks:
        elements = math.prod(int(values[name]) for name in block)
        if elements > MAX_BLOCK_ELEMENTS:
            raise ContractError(
                f"block {' x '.join(f'{n} = {values[n]}' for n in block)} holds {elements} "
                f"elements, above Triton's limit of {MAX_BLOCK_ELEMENTS}"
            )


def check_launch_config(num_warps: int, num_stages: int) -> None:
    if not (1 <= num_warps <= MAX_NUM_WARPS and num_warps & (num_warps - 1) == 0):
        raise ContractError(
            f"num_warps must be a power of two in 1..{MAX_NUM_WARPS}, got {num_warps}"
        )
    if num_stages < 1:
        raise ContractError(f"num_stages must be >= 1, got {num_stages}")


def parse_over_batch(what: str, text: str) -> expressions.Expr:
    """An expression whose only symbol is the batch ``B``."""
    try:
        expr = expressions.parse_cached(text)
    except expressions.ExpressionError as err:
        raise ContractError(f"{what} = '{text}' is not an expression: {err}") from None
    for symbol in sorted(expressions.symbols(expr) - {BATCH}):
        raise ContractError(
            f"{what} = '{text}' uses symbol '{symbol}': only the batch '{BATCH}' may appear"
        )
    return expr


def validate(contract: LaunchContract, batches: Sequence[int] = COVERAGE_BATCHES) -> None:
    """Prove ``contract`` for every batch in ``batches`` (raises `ContractError`).

    The proof is memoised on the contract with its tensors renamed by first use
    (`canonical`), so the same launch described by the kernel dialect (SSA
    values) and by the plan (buffer names) is proven once; a launch that fails
    is proven again under its own names, for the message."""
    batches = tuple(batches)
    try:
        _validate(canonical(contract), batches)
    except ContractError:
        _validate(contract, batches)
        raise


def canonical(contract: LaunchContract) -> LaunchContract:
    """``contract`` with each tensor a pointer binds renamed ``%0``, ``%1``, ...
    in the order the arguments first bind it, and the tensors no pointer binds
    left out: what a proof depends on, without the caller's names."""
    family = FAMILIES.get(contract.family)
    if family is None:
        return contract
    kinds = {a.name: a.kind for a in family.args}
    names: dict[str, str] = {}
    for arg, key in contract.args:
        if kinds.get(arg) in POINTER_KINDS and key not in names:
            names[key] = f"%{len(names)}"
    tensors = dict(contract.tensors)
    if any(key not in tensors for key in names):
        return contract  # an unbound pointer: the message names it
    strides = dict(contract.strides)
    return LaunchContract(
        family=contract.family,
        constexprs=contract.constexprs,
        args=tuple(
            (arg, names[key] if kinds.get(arg) in POINTER_KINDS else key)
            for arg, key in contract.args
        ),
        tensors=tuple((names[key], tensors[key]) for key in names),
        grid=contract.grid,
        num_warps=contract.num_warps,
        num_stages=contract.num_stages,
        strides=tuple((names[key], strides[key]) for key in names if key in strides),
    )


@functools.lru_cache(maxsize=4096)
def _validate(contract: LaunchContract, batches: tuple[int, ...]) -> None:
    family = family_of(contract.family)
    constexprs = dict(contract.constexprs)
    check_constexprs(family, constexprs)
    check_launch_config(contract.num_warps, contract.num_stages)
    if len(contract.grid) != 3:
        raise ContractError(f"expected 3 grid expressions (x, y, z), got {len(contract.grid)}")
    abi = [a.name for a in family.args]
    if [name for name, _ in contract.args] != abi:
        raise ContractError(
            f"family '{family.name}' takes the arguments {', '.join(abi)}, got "
            f"{', '.join(name for name, _ in contract.args)}"
        )
    tensors = dict(contract.tensors)
    bindings = dict(contract.args)
    pointers = {a.name: bindings[a.name] for a in family.args if a.kind in POINTER_KINDS}
    for name, key in pointers.items():
        if key not in tensors:
            raise ContractError(f"argument '{name}' is bound to no tensor ('{key}')")
    texts = {
        f"argument '{a.name}'": bindings[a.name] for a in family.args if a.kind not in POINTER_KINDS
    }
    texts |= {f"grid[{axis}]": text for axis, text in enumerate(contract.grid)}
    compiled = {what: parse_over_batch(what, text) for what, text in texts.items()}
    shapes = {key: tuple(_dim_expr(key, d) for d in tensors[key]) for key in set(pointers.values())}
    depends = any(BATCH in expressions.symbols(e) for e in compiled.values()) or any(
        not isinstance(d, expressions.Num) for shape in shapes.values() for d in shape
    )
    tiles = {k: v for k, v in constexprs.items() if isinstance(v, int)}
    if depends and _proven_over_range(family, contract, compiled, shapes, pointers, tiles, batches):
        return
    for batch in batches if depends else batches[:1]:
        _prove_at(family, contract, compiled, texts, shapes, pointers, tiles, batch)


def _dim_expr(key: str, dim: Dim) -> expressions.Expr:
    if isinstance(dim, int):
        return expressions.Num(dim)
    return parse_over_batch(f"shape of '{key}'", dim)


def _evaluate(what: str, text: str, expr: expressions.Expr, env: Mapping[str, int]) -> int:
    try:
        return expressions.compile_expr(expr)(env)
    except expressions.ExpressionError as err:
        raise ContractError(
            f"{what} = '{text}' cannot be evaluated at B = {env[BATCH]}: {err}"
        ) from None


def _prove_at(
    family: KernelFamily,
    contract: LaunchContract,
    compiled: Mapping[str, expressions.Expr],
    texts: Mapping[str, str],
    shapes: Mapping[str, tuple[expressions.Expr, ...]],
    pointers: Mapping[str, str],
    tiles: Mapping[str, int],
    batch: int,
) -> None:
    at = {BATCH: batch}
    values = {what: _evaluate(what, texts[what], e, at) for what, e in compiled.items()}
    env: dict[str, int] = dict(tiles)
    i32 = {a.name for a in family.args if a.dtype == "i32"}
    for arg in family.args:
        what = f"argument '{arg.name}'"
        if what not in values:
            continue
        value = env[arg.name] = values[what]
        if arg.name in i32 and not 0 <= value <= MAX_I32:
            raise ContractError(
                f"{what} = '{texts[what]}' is {value} at B = {batch}, outside "
                f"[0, {MAX_I32}] (i32 sizes and strides)"
            )
    concrete = {
        key: tuple(expressions.compile_expr(d)(at) for d in shape) for key, shape in shapes.items()
    }
    for key, shape in concrete.items():
        if any(d < 1 for d in shape):
            raise ContractError(f"tensor '{key}' has shape {list(shape)} at B = {batch}")
    bound = {name: concrete[key] for name, key in pointers.items()}
    _check_implied(family, env, texts, bound, batch)
    strides = dict(contract.strides)
    for name, key in pointers.items():
        shape = concrete[key]
        image = math.prod(shape[1:])
        stride_arg = family.batch_strides.get(name)
        if key in strides and stride_arg is None:
            raise ContractError(
                f"argument '{name}' of family '{family.name}' takes only contiguous tensors, "
                f"but '{key}' is a batch-strided view (batch stride {strides[key]})"
            )
        stride = strides.get(key, image)
        if stride < image:
            raise ContractError(
                f"tensor '{key}' has batch stride {stride}, less than its image of {image} elements"
            )
        if stride_arg is not None and env[stride_arg] != stride:
            text = texts[f"argument {stride_arg!r}"]
            raise ContractError(
                f"argument '{stride_arg}' = '{text}' is {env[stride_arg]} at B = {batch}, but "
                f"'{key}' (bound to '{name}') has batch stride {stride}"
            )
        footprint = family.footprints.get(name)
        if footprint is None:
            raise ContractError(f"family '{family.name}' declares no footprint for '{name}'")
        reach = _evaluate(
            f"footprint of '{name}'", footprint, expressions.parse_cached(footprint), env | at
        )
        size = (shape[0] - 1) * stride + image if shape else 1
        if reach > size:
            layout = f" with batch stride {stride}" if key in strides else ""
            raise ContractError(
                f"argument '{name}' may touch {reach} elements at B = {batch} "
                f"({footprint}), but '{key}' holds {size} {list(shape)}{layout}"
            )
    models = [
        [tuple(map(expressions.parse_cached, cover)) for cover in axis.covers]
        for axis in family.grid
    ]
    for axis, text in enumerate(contract.grid):
        programs = values[f"grid[{axis}]"]
        where = f"grid[{axis}] = '{text}' is {programs} at B = {batch}"
        if programs < 1:
            raise ContractError(f"{where}: each grid dimension must be >= 1")
        if programs > MAX_GRID[axis]:
            raise ContractError(f"{where}, above the hardware limit {MAX_GRID[axis]}")
        needed = math.prod(
            expressions.compile_expr(expressions.Call("cdiv", extent, tile))(env)
            for extent, tile in (models[axis] if axis < len(models) else [])
        )
        if programs < needed:
            model = " * ".join(f"cdiv({e}, {t})" for e, t in family.grid[axis].covers)
            raise ContractError(
                f"{where}, but the tile model of '{family.name}' needs {model} = {needed}"
            )


def _check_implied(
    family: KernelFamily,
    env: Mapping[str, int],
    texts: Mapping[str, str],
    bound: Mapping[str, tuple[int, ...]],
    batch: int,
) -> None:
    """The dims take the values the bound tensors imply (one alternative fully)."""
    if family.implied is None:
        return
    alternatives = family.implied(bound)
    if any(
        all(want is None or env[name] == want for name, want in dims.items())
        for dims in alternatives
    ):
        return  # the message below is built only for a launch that fails
    shapes = ", ".join(f"{name} {list(shape)}" for name, shape in bound.items())
    if not alternatives:
        raise ContractError(f"family '{family.name}' cannot take tensors of shapes {shapes}")
    name, want = next(
        (name, want)
        for name, want in alternatives[0].items()
        if want is not None and env[name] != want
    )
    raise ContractError(
        f"argument '{name}' = '{texts[f'argument {name!r}']}' is {env[name]} at "
        f"B = {batch}, but the bound tensors ({shapes}) imply {want}"
    )


@dataclass(frozen=True)
class _Form:
    """The integer function ``a + b*B + m * floordiv(r + s*B, t)`` of the batch
    ``B`` (``div`` = ``(r, s, t)`` with ``0 <= r < t``, ``0 < s < t``, ``t >= 2``
    and ``gcd(r, s, t) = 1``; None exactly when ``m`` is 0), over a range of
    batches. Exact for every ``B`` of the range: each step that builds one
    (`_add`, `_mul`, `_divide`) is an identity of integer arithmetic there, and
    whatever none of them expresses is None instead."""

    a: int
    b: int = 0
    m: int = 0
    div: tuple[int, int, int] | None = None

    def at(self, batch: int) -> int:
        value = self.a + self.b * batch
        if self.div is not None:
            r, s, t = self.div
            value += self.m * ((r + s * batch) // t)
        return value

    def constant(self) -> bool:
        return self.b == 0 and self.div is None


_BATCH_FORM = _Form(0, 1)

Span = tuple[int, int]
"""The least and greatest batch of a range."""


def _form_of(a: int, b: int, m: int, div: tuple[int, int, int] | None) -> _Form:
    return _Form(a, b) if m == 0 or div is None else _Form(a, b, m, div)


def _add(x: _Form, y: _Form, sign: int = 1) -> _Form | None:
    """``x + sign * y`` (None where both hold different divisions)."""
    if x.div is not None and y.div is not None and x.div != y.div:
        return None
    return _form_of(x.a + sign * y.a, x.b + sign * y.b, x.m + sign * y.m, x.div or y.div)


def _scale(x: _Form, factor: int) -> _Form:
    return _form_of(x.a * factor, x.b * factor, x.m * factor, x.div)


def _mul(x: _Form, y: _Form) -> _Form | None:
    """``x * y``, where one of them is constant (else not a form: None)."""
    if x.constant():
        return _scale(y, x.a)
    if y.constant():
        return _scale(x, y.a)
    return None


def _divide(func: str, x: _Form, y: _Form, span: Span) -> _Form | None:
    """``cdiv``/``floordiv``/``min``/``max`` of ``x`` and ``y`` as `expressions`
    evaluates them, on ``span``: constants folded (None for a division by zero,
    which the batch-by-batch proof reports); an affine ``x`` over a nonzero
    constant put in the normal form; over an affine divisor, or for ``min`` and
    ``max``, a result the range pins down (`_quotient`, `_extremum`); anything
    else None."""
    if x.constant() and y.constant():
        lhs, rhs = x.a, y.a
        if func in ("cdiv", "floordiv") and rhs == 0:
            return None
        if func == "cdiv":
            return _Form(-((-lhs) // rhs))
        if func == "floordiv":
            return _Form(lhs // rhs)
        return _Form(min(lhs, rhs) if func == "min" else max(lhs, rhs))
    if func in ("min", "max"):
        return _extremum(func, x, y, span)
    if x.div is not None or y.div is not None:
        return None
    if not y.constant():
        return _quotient(func, x, y, span)
    a, b, t = x.a, x.b, y.a
    if t == 0:
        return None
    if t < 0:  # floor(x / t) = floor(-x / -t), and so for the ceiling
        a, b, t = -a, -b, -t
    if func == "cdiv":  # ceil(x / t) = floor((x + t - 1) / t) for t > 0
        a += t - 1
    g = math.gcd(a, b, t)  # floor(x / t) = floor((x / g) / (t / g))
    a, b, t = a // g, b // g, t // g
    q, r = divmod(a, t)  # floor((q*t + r + (p*t + s)*B) / t) = q + p*B + floor((r + s*B) / t)
    p, s = divmod(b, t)
    if s == 0:  # then 0 <= r < t: the floor of r / t is 0
        return _Form(q, p)
    return _Form(q, p, 1, (r, s, t))


def _quotient(func: str, x: _Form, y: _Form, span: Span) -> _Form | None:
    """``floordiv(x, y)`` (``cdiv``: ``floordiv(x + y - 1, y)``) for affine ``x``
    and ``y`` with ``y >= 1`` on ``span``, where it is one constant ``q`` there:
    ``x - q*y >= 0`` and ``(q + 1)*y - 1 - x >= 0`` at both ends (affine, so on
    all of it); ``floordiv(B*N - 1, B*N)`` is 0. Else None."""
    if not _within(y, span, 1):
        return None
    if func == "cdiv":
        x = _Form(x.a + y.a - 1, x.b + y.b)
    q = x.at(span[0]) // y.at(span[0])
    low = _Form(x.a - q * y.a, x.b - q * y.b)
    high = _Form((q + 1) * y.a - 1 - x.a, (q + 1) * y.b - x.b)
    return _Form(q) if _within(low, span, 0) and _within(high, span, 0) else None


def _extremum(func: str, x: _Form, y: _Form, span: Span) -> _Form | None:
    """``min(x, y)`` or ``max(x, y)`` where ``x - y`` keeps one sign all over
    ``span`` (so one of them is the result everywhere); else None."""
    difference = _add(x, y, -1)
    bounds = None if difference is None else _range(difference, span)
    if bounds is None:
        return None
    if bounds[1] <= 0:  # x <= y everywhere
        return x if func == "min" else y
    if bounds[0] >= 0:  # x >= y everywhere
        return y if func == "min" else x
    return None


def _form(expr: expressions.Expr, env: Mapping[str, _Form], span: Span) -> _Form | None:
    """``expr`` over ``env`` as a `_Form` on ``span``, or None (an unbound
    symbol, a division by zero, a product of two batch-dependent terms, a
    quotient or extremum the range does not pin down)."""
    if isinstance(expr, expressions.Num):
        return _Form(expr.value)
    if isinstance(expr, expressions.Sym):
        return env.get(expr.name)
    lhs = _form(expr.lhs, env, span)
    rhs = _form(expr.rhs, env, span) if lhs is not None else None
    if lhs is None or rhs is None:
        return None
    if isinstance(expr, expressions.BinOp):
        if expr.op == "*":
            return _mul(lhs, rhs)
        return _add(lhs, rhs, 1 if expr.op == "+" else -1)
    return _divide(expr.func, lhs, rhs, span)


def _range(form: _Form, span: Span) -> tuple[int, int] | None:
    """The least and greatest value of ``form`` for ``B`` in ``span``: at the
    ends, where it is monotone (``b`` and ``m`` of one sign: ``floordiv(r + s*B,
    t)`` grows with ``B``, as ``s > 0``), else None."""
    if (form.b >= 0 and form.m >= 0) or (form.b <= 0 and form.m <= 0):
        first, last = form.at(span[0]), form.at(span[1])
        return min(first, last), max(first, last)
    return None


def _within(form: _Form | None, span: Span, low: int, high: int | None = None) -> bool:
    """Whether ``low <= form <= high`` is proven for every ``B`` in ``span``."""
    bounds = None if form is None else _range(form, span)
    return bounds is not None and bounds[0] >= low and (high is None or bounds[1] <= high)


def _zero(form: _Form | None, span: Span) -> bool:
    """Whether ``form`` is proven 0 for every ``B`` in ``span`` (an affine form
    that is 0 at both ends of a range of two or more)."""
    return form is not None and form.div is None and form.at(span[0]) == form.at(span[1]) == 0


def _proven_over_range(
    family: KernelFamily,
    contract: LaunchContract,
    compiled: Mapping[str, expressions.Expr],
    shapes: Mapping[str, tuple[expressions.Expr, ...]],
    pointers: Mapping[str, str],
    tiles: Mapping[str, int],
    batches: tuple[int, ...],
) -> bool:
    """Whether every check `_prove_at` makes holds for every batch in
    ``batches`` (a range of at least two), proven on the `_Form` of each
    quantity at the range's ends, with the family's ``implied`` dims checked at
    every batch. False means not proven here (the batch-by-batch proof decides
    and words the message), never that the launch is unsafe."""
    if len(batches) < 2 or batches != tuple(range(batches[0], batches[-1] + 1)):
        return False
    span = (batches[0], batches[-1])
    at = {BATCH: _BATCH_FORM}
    values: dict[str, _Form] = {}
    for what, expr in compiled.items():
        value = _form(expr, at, span)
        if value is None:
            return False
        values[what] = value
    env = {name: _Form(value) for name, value in tiles.items()}
    for arg in family.args:
        what = f"argument '{arg.name}'"
        if what not in values:
            continue
        env[arg.name] = values[what]
        if arg.dtype == "i32" and not _within(values[what], span, 0, MAX_I32):
            return False
    forms: dict[str, tuple[_Form, ...]] = {}
    for key, exprs in shapes.items():
        dims = tuple(_form(d, at, span) for d in exprs)
        if not all(_within(d, span, 1) for d in dims):
            return False
        forms[key] = tuple(d for d in dims if d is not None)
    if family.implied is not None and not _implied_everywhere(
        family, env, forms, pointers, batches
    ):
        return False
    strides = dict(contract.strides)
    reach_env = env | at
    for name, key in pointers.items():
        dims = forms[key]
        image: _Form | None = _Form(1)
        for dim in dims[1:]:
            image = None if image is None else _mul(image, dim)
        stride_arg = family.batch_strides.get(name)
        footprint = family.footprints.get(name)
        if image is None or footprint is None or (key in strides and stride_arg is None):
            return False
        stride = _Form(strides[key]) if key in strides else image
        if not _within(_add(stride, image, -1), span, 0):
            return False
        if stride_arg is not None:
            declared = env.get(stride_arg)
            if declared is None or not _zero(_add(declared, stride, -1), span):
                return False
        try:
            reach = _form(expressions.parse_cached(footprint), reach_env, span)
        except expressions.ExpressionError:
            return False
        size: _Form | None = _Form(1)
        if dims:  # (shape[0] - 1) * stride + image
            before_last = _add(dims[0], _Form(1), -1)
            reached = None if before_last is None else _mul(before_last, stride)
            size = None if reached is None else _add(reached, image)
        if reach is None or size is None or not _within(_add(size, reach, -1), span, 0):
            return False
    for axis, programs in enumerate(values[f"grid[{i}]"] for i in range(len(contract.grid))):
        if not _within(programs, span, 1, MAX_GRID[axis]):
            return False
        needed: _Form | None = _Form(1)
        for extent, tile in family.grid[axis].covers if axis < len(family.grid) else ():
            try:
                extent_form = _form(expressions.parse_cached(extent), env, span)
                tile_form = _form(expressions.parse_cached(tile), env, span)
            except expressions.ExpressionError:
                return False
            if needed is None or extent_form is None or tile_form is None:
                return False
            covered = _divide("cdiv", extent_form, tile_form, span)
            needed = None if covered is None else _mul(needed, covered)
        if needed is None or not _within(_add(programs, needed, -1), span, 0):
            return False
    return True


def _implied_everywhere(
    family: KernelFamily,
    env: Mapping[str, _Form],
    forms: Mapping[str, tuple[_Form, ...]],
    pointers: Mapping[str, str],
    batches: tuple[int, ...],
) -> bool:
    """What `_check_implied` checks, at every batch: one alternative the bound
    tensors imply is met by the dims (the family's ``implied`` is a Python
    function of concrete shapes, with no normal form). False at the first
    batch where none is met or ``implied`` raises (the batch-by-batch proof
    raises it again, in its own order)."""
    assert family.implied is not None
    shapes = tuple((name, forms[key]) for name, key in pointers.items())
    try:
        implied = _implied_over(family.implied, shapes, batches)
    except Exception:  # noqa: BLE001 - not proven here; _prove_at raises it in order
        return False
    fixed = {name: form.a for name, form in env.items() if form.constant()}
    varying = {name: form for name, form in env.items() if not form.constant()}
    for batch, alternatives in zip(batches, implied, strict=True):
        if not any(_meets(dims, fixed, varying, batch) for dims in alternatives):
            return False
    return True


def _meets(
    dims: Mapping[str, int | None],
    fixed: Mapping[str, int],
    varying: Mapping[str, _Form],
    batch: int,
) -> bool:
    """Whether the dims (``fixed`` values, ``varying`` forms at ``batch``) take
    every value ``dims`` asks for (None: any)."""
    for name, want in dims.items():
        if want is None:
            continue
        if name in fixed:
            if fixed[name] != want:
                return False
        elif name not in varying or varying[name].at(batch) != want:
            return False
    return True


@functools.lru_cache(maxsize=256)
def _implied_over(
    implied: Implied, shapes: tuple[tuple[str, tuple[_Form, ...]], ...], batches: tuple[int, ...]
) -> tuple[list[dict[str, int | None]], ...]:
    """The alternatives a family's ``implied`` gives at each batch for pointers
    bound to tensors of those shapes: the same for every launch of the family
    over tensors of those shapes, whatever its tiles and grid (a model's many
    convs of one shape), so computed once for all of them."""
    fixed = [
        (name, tuple(d.a for d in dims) if all(d.constant() for d in dims) else None, dims)
        for name, dims in shapes
    ]  # in the pointers' order, as _prove_at binds them
    return tuple(
        implied(
            {
                name: value if value is not None else tuple(d.at(batch) for d in dims)
                for name, value, dims in fixed
            }
        )
        for batch in batches
    )
