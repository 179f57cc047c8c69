"""The ``batch_norm_backward`` kernel family: ``graph.batch_norm_backward`` (dx,
dgamma, dbeta of a training-form batch norm, its statistics recomputed from x
two-pass in fp32) as one launch (``contract``, ``kernel``, ``lowering``; tiles
from `teeny_ir.kernels.batch_norm_train.tiles`)."""
