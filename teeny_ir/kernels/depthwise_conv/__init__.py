"""The ``depthwise_conv`` kernel family: depthwise 2-D convolution (one group
per channel, channel multiplier 1; any kernel size, stride, four-sided padding
and dilation) as a direct convolution without ``tl.dot``, with the GEMM
families' epilogue (scale/shift/activation, then an optional residual)
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
