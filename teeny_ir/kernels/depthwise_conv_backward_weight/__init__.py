"""The ``depthwise_conv_backward_weight`` kernel family: the weight gradient of
a depthwise 2-D convolution (``groups == C_IN == C_OUT``, any kernel size,
stride, four-sided padding and dilation) as one program per (channel, tap)
block reducing over the batch's output positions in a fixed order, without
``tl.dot`` or atomics (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
