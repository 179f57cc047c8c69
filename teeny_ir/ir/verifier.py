"""Verification op by op, with dominance, as mlir-opt reports it.

xDSL's ``verify()`` stops at the first failure and does not say which op
failed; here every op is verified on its own (post-order), so one file reports
every error, each located at its op. xDSL has no dominance check either: this
module adds one (same block, enclosing blocks, and a dominator computation for
multi-block regions). Hand-written rather than networkx's dominators: parsing
must not import networkx (start-up), and the common case is one block.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator

from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Block, Operation, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from teeny_ir.core.diagnostics import Diagnostic, Severity, loc_of

_MEMO: contextvars.ContextVar[dict[object, object] | None] = contextvars.ContextVar(
    "teeny_ir_verification_memo", default=None
)


def verification_memo() -> dict[object, object] | None:
    """A dict that lives for one `verify_ops` run, or None outside one.

    The IR does not change while it is verified, so an op verifier that needs a
    fact about an enclosing op (a function's weight table) may compute it once
    per run and keep it here, keyed by something that names the fact and the
    op; verifying every op stays linear."""
    return _MEMO.get()


def _walk_post_order(op: Operation) -> Iterator[Operation]:
    # Explicit stack: deep region nesting must not hit Python's recursion limit.
    stack: list[tuple[Operation, bool]] = [(op, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded:
            yield current
            continue
        stack.append((current, True))
        children = [
            child for region in current.regions for block in region.blocks for child in block.ops
        ]
        stack.extend((child, False) for child in reversed(children))


def verify_ops(
    module: Operation, describe: Callable[[Operation], str] | None = None
) -> list[Diagnostic]:
    """Verify op by op (post-order) and return one error per failing op.

    Besides each op's own verifier this checks dominance, which xDSL does not:
    a value must be defined before its use in the same block, or in a block
    enclosing the use, or in a block that dominates the use's block (a
    dominator tree, built per multi-block region on first need).
    ``describe`` renders the op for a "see current operation" note; None omits
    the note (as mlir-opt does under ``--verify-diagnostics``).
    """
    token = _MEMO.set({})
    try:
        return _verify_all(module, describe)
    finally:
        _MEMO.reset(token)


def _verify_all(
    module: Operation, describe: Callable[[Operation], str] | None
) -> list[Diagnostic]:
    errors: list[Diagnostic] = []
    positions = _BlockPositions()
    for op in _walk_post_order(module):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as err:
            errors.append(_op_error(op, str(err), describe))
            continue
        except Exception as err:  # noqa: BLE001 - verifiers of any dialect may misbehave
            errors.append(_op_error(op, f"verifier failed: {err}", describe))
            continue
        if (missing := _terminator_error(op)) is not None:
            errors.append(_op_error(op, missing, describe))
            continue
        if (dominance := _dominance_error(op, positions)) is not None:
            index, definer = dominance
            error = _op_error(op, f"operand #{index} does not dominate this use", describe)
            error.attach_note("operand defined here", loc_of(definer))
            errors.append(error)
    return errors


def _terminator_error(op: Operation) -> str | None:
    """MLIR's rule: every block of a region ends with a terminator, unless the
    op holding the region says otherwise (``NoTerminator``) or is unregistered
    (its rules are unknown). A passes' rewrites assume it (dce erases the
    blocks after an unterminated one)."""
    from xdsl.dialects.builtin import UnregisteredOp
    from xdsl.traits import IsTerminator, NoTerminator

    if not op.regions or isinstance(op, UnregisteredOp) or op.has_trait(NoTerminator):
        return None
    for region in op.regions:
        for block in region.blocks:
            last = block.last_op
            if last is None:
                return "empty block: expect at least a terminator"
            if not isinstance(last, UnregisteredOp) and not last.has_trait(IsTerminator):
                return f"block with no terminator, has '{last.name}' last"
    return None


class _BlockPositions:
    """Index of each op in its block and the dominators of each block, computed
    once per block (or region) and reused for every use checked."""

    def __init__(self) -> None:
        self._index: dict[int, dict[int, int]] = {}
        self._dominators: dict[int, dict[Block, set[Block]]] = {}

    def of(self, op: Operation) -> int:
        block = op.parent
        assert block is not None
        table = self._index.get(id(block))
        if table is None:
            table = {id(child): i for i, child in enumerate(block.ops)}
            self._index[id(block)] = table
        return table[id(op)]

    def dominators(self, region: Region) -> dict[Block, set[Block]]:
        """Dominator sets of the blocks reachable from the region's entry."""
        found = self._dominators.get(id(region))
        if found is None:
            found = _dominator_sets(region)
            self._dominators[id(region)] = found
        return found


def _dominator_sets(region: Region) -> dict[Block, set[Block]]:
    blocks = list(region.blocks)
    successors = {b: list(b.last_op.successors) if b.last_op else [] for b in blocks}
    reachable: list[Block] = [blocks[0]]
    seen = {blocks[0]}
    for block in reachable:
        for succ in successors[block]:
            if succ not in seen and succ.parent is region:
                seen.add(succ)
                reachable.append(succ)
    predecessors: dict[Block, list[Block]] = {b: [] for b in reachable}
    for block in reachable:
        for succ in successors[block]:
            if succ in predecessors:
                predecessors[succ].append(block)
    dom = {b: set(reachable) for b in reachable}
    dom[blocks[0]] = {blocks[0]}
    changed = True
    while changed:
        changed = False
        for block in reachable[1:]:
            new = set.intersection(*(dom[p] for p in predecessors[block])) | {block}
            if new != dom[block]:
                dom[block], changed = new, True
    return dom


def _dominance_error(op: Operation, positions: _BlockPositions) -> tuple[int, Operation] | None:
    for index, operand in enumerate(op.operands):
        definer = operand.owner
        if not isinstance(definer, Operation) or definer.parent is None:
            continue
        block = definer.parent
        user: Operation | None = op
        while user is not None and user.parent is not block:
            user = user.parent_op()
        if user is not None:
            if user is definer or positions.of(user) < positions.of(definer):
                return index, definer
        elif not _dominates_across_blocks(block, op, positions):
            return index, definer
    return None


def _dominates_across_blocks(block: Block, op: Operation, positions: _BlockPositions) -> bool:
    """Whether ``block`` dominates the block of ``op`` (or of its ancestor) in
    the same region; uses outside that region never are. As in MLIR, uses in
    unreachable blocks are not checked."""
    region = block.parent
    current: Operation | None = op
    while current is not None:
        if current.parent is not None and current.parent.parent is region:
            assert region is not None
            dominators = positions.dominators(region).get(current.parent)
            return dominators is None or block in dominators
        current = current.parent_op()
    return False


def _op_error(
    op: Operation, message: str, describe: Callable[[Operation], str] | None
) -> Diagnostic:
    first = " ".join(message.split()) or "verification failed"
    name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
    diagnostic = Diagnostic(Severity.ERROR, f"'{name}' op {first}", loc_of(op))
    if describe is not None:
        diagnostic.attach_note(f"see current operation: {describe(op)}", loc_of(op))
    return diagnostic


def describe_op(op: Operation) -> str:
    """An op in generic form on one line, regions elided, for notes."""
    from io import StringIO

    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(op)
    text = stream.getvalue()
    first = text.splitlines()[0] if text else op.name
    return first if len(first) <= 300 else first[:297] + "..."
