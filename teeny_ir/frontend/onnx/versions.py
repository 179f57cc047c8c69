"""Which version of an ONNX op a node is, and whether a handler written for an
older version still describes it.

ONNX versions every op separately: a model's opset picks, for each op type, the
newest schema whose ``since_version`` is not above it. Most new versions only
widen the element types an op accepts (opset 22 added bfloat16 to dozens of ops,
opset 23 float4), which changes nothing for float32 tensors; the others add,
remove or re-default an input or attribute (Softmax 13, ReduceSum 13, Split 18,
Shape 15). A handler registered ``since=h`` serves a node whose schema is
version ``v >= h`` when every version in ``(h, v]`` has the same signature as
the one before it: the same inputs and outputs (names and optionality) and the
same attributes (names, types, whether required, defaults). A change of
signature needs a handler written for it; a change of meaning that keeps the
signature (a new value of a string attribute: Resize 19's
``half_pixel_symmetric``, Pad 19's ``wrap``) reaches the handler, which refuses
values it does not know (`Node.attrs` hands them over unchecked).
"""

from __future__ import annotations

import functools
import itertools

from onnx import defs


def schema_version(op_type: str, domain: str, opset: int) -> int | None:
    """The ``since_version`` of the schema ``op_type`` has at ``opset`` of
    ``domain``; None when the op does not exist there."""
    try:
        return int(defs.get_schema(op_type, opset, domain).since_version)
    except defs.SchemaError:
        return None


@functools.cache
def _signatures(op_type: str, domain: str) -> dict[int, tuple[object, ...]]:
    """Every version of the op, and its signature."""
    found: dict[int, tuple[object, ...]] = {}
    for opset in range(1, defs.onnx_opset_version() + 1):
        try:
            schema = defs.get_schema(op_type, opset, domain)
        except defs.SchemaError:
            continue
        if schema.since_version in found:
            continue
        attributes = tuple(
            sorted(
                (a.name, str(a.type), bool(a.required), a.default_value.SerializeToString())
                for a in schema.attributes.values()
            )
        )
        inputs = tuple((p.name, str(p.option)) for p in schema.inputs)
        outputs = tuple((p.name, str(p.option)) for p in schema.outputs)
        found[int(schema.since_version)] = (attributes, inputs, outputs)
    return found


def first_change(op_type: str, domain: str, since: int, version: int) -> int | None:
    """The first version in ``(since, version]`` whose signature differs from
    the version before it (a handler for ``since`` does not know it); None when
    every version there only changed element types."""
    signatures = _signatures(op_type, domain)
    ordered = sorted(signatures)
    for previous, current in itertools.pairwise(ordered):
        if since < current <= version and signatures[current] != signatures[previous]:
            return current
    return None
