"""The ``elementwise`` kernel family: any entry of the pointwise table over a
rank-4 view with numpy broadcasting (``contract``, ``kernel``, ``lowering``)."""
