"""The ``conv2d_backward_weight`` kernel family: ``graph.conv2d_backward_weight``,
the weight gradient of any 2-D convolution (kernel size, stride, four-sided
padding, dilation, groups) as a GEMM over batch x output positions, reduced
inside each program (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
