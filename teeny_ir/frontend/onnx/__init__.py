"""The ONNX frontend: `import_onnx` turns an ONNX model into a verified graph-dialect
module and its weights (`teeny_ir.frontend.imported.ImportedModel`).

Handlers live one module per op group and register into `ONNX_RULES` with
``@onnx_op("Conv", since=11)``; `teeny_ir.frontend.onnx.importer` walks the graph.
This package imports onnx (the ``onnx`` extra): nothing outside it but the
``teeny-import`` command does.
"""

from __future__ import annotations

from teeny_ir.frontend.imported import ImportedModel
from teeny_ir.frontend.onnx.context import ONNX_RULES, onnx_op
from teeny_ir.frontend.onnx.importer import import_onnx

__all__ = ["ONNX_RULES", "ImportedModel", "import_onnx", "onnx_op"]
