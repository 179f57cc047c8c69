"""The ``depthwise_conv_backward_data`` kernel family: the input gradient of a
depthwise 2-D convolution (``groups == C_IN == C_OUT``, any kernel size,
stride, four-sided padding and dilation) as a direct gather of ``dy`` times
the weight, without ``tl.dot`` (``contract``, ``kernel``, ``lowering``; its
tiles are the forward's, `teeny_ir.kernels.depthwise_conv.tiles`)."""
