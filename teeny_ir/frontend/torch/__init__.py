"""The torch.export frontend: `import_exported` turns a ``torch.export`` program
(and `import_module` an ``nn.Module`` on example inputs) into a verified
graph-dialect module and its weights (`teeny_ir.frontend.imported.ImportedModel`),
parameters and buffers named by their state-dict keys.

Handlers live one module per op group and register into `TORCH_RULES` with
``@aten_op("aten.conv2d")`` (keyed by the ATen overload packet: see
`teeny_ir.frontend.torch.context`); `teeny_ir.frontend.torch.importer` walks the
graph. This package imports torch: nothing outside it but the ``teeny-import``
command does.
"""

from __future__ import annotations

from teeny_ir.frontend.imported import ImportedModel
from teeny_ir.frontend.torch.context import TORCH_RULES, aten_op
from teeny_ir.frontend.torch.importer import import_exported, import_module, load

__all__ = ["TORCH_RULES", "ImportedModel", "aten_op", "import_exported", "import_module", "load"]
