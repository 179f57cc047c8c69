"""The ``batch_norm_train`` kernel family: a training-form ``graph.batch_norm``
(batch statistics per channel over every dimension but 1, two-pass in fp32, the
updated running statistics) as one launch (``contract``, ``kernel``,
``lowering``, ``tiles``)."""
