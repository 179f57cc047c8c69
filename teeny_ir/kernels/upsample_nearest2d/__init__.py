"""The ``upsample_nearest2d`` kernel family: nearest-neighbour upsampling of NCHW
by integer factors (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
