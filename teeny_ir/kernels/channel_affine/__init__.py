"""The ``channel_affine`` kernel family: ``y = act(x * scale[c] + shift[c])`` per
channel (dimension 1) of a rank >= 2 tensor, its scale and shift parameter slots
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
