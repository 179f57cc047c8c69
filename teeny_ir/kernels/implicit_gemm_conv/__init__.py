"""The ``implicit_gemm_conv`` kernel family: any 2-D convolution (kernel size,
stride, four-sided padding, dilation, groups) as an implicit GEMM with the
per-channel scale/shift/activation epilogue (``contract``, ``kernel``,
``lowering``, ``tiles``)."""
