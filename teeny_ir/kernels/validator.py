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
Only the standard library is imported.
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
    shapes = ", ".join(f"{name} {list(shape)}" for name, shape in bound.items())
    if not alternatives:
        raise ContractError(f"family '{family.name}' cannot take tensors of shapes {shapes}")
    first_mismatch = ""
    for dims in alternatives:
        mismatch = next(
            (
                f"argument '{name}' = '{texts[f'argument {name!r}']}' is {env[name]} at "
                f"B = {batch}, but the bound tensors ({shapes}) imply {want}"
                for name, want in dims.items()
                if want is not None and env[name] != want
            ),
            "",
        )
        if not mismatch:
            return
        first_mismatch = first_mismatch or mismatch
    raise ContractError(first_mismatch)
