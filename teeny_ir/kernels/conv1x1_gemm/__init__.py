"""The ``conv1x1_gemm`` kernel family: a 1x1 convolution as a GEMM per image with
the per-channel scale/shift/activation epilogue (``contract``, ``kernel``,
``lowering``, ``tiles``)."""
