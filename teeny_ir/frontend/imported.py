"""`ImportedModel`: what an importer returns (the ONNX importer, later the torch one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp


@dataclass(frozen=True)
class ImportedModel:
    """A verified graph-dialect ``module`` holding ``func.func @forward``, and its
    ``weights``: one array per `graph.param`, by the param's name."""

    module: ModuleOp
    weights: dict[str, np.ndarray]
