"""The ``conv2d_backward_data`` kernel family: ``graph.conv2d_backward_data``, the
input gradient of any 2-D convolution (kernel size, stride, four-sided padding,
dilation, groups) as an implicit GEMM over the transposed convolution
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
