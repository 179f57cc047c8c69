"""The ``cross_entropy`` kernel family: ``graph.cross_entropy``, the mean softmax
cross-entropy of f32 logits [N, C] against i64 class indices [N], with a status
output that the runtime checks after the run (``contract``, ``kernel``,
``lowering``)."""
