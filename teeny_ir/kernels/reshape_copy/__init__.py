"""The ``reshape_copy`` kernel family: a static ``graph.reshape`` or
``graph.flatten`` that changes dimension 0 (ONNX ``Flatten(axis=2)`` of a
static batch, ``[4] -> [1, 4, 1]``) as one copy launch over the elements in
row-major order (``contract``, ``kernel``, ``lowering``). A reshape that keeps
dimension 0 is a ``kernel.reshape`` view instead (`teeny_ir.kernels.views`)."""
