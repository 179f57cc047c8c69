"""The ``elementwise`` kernel family: any entry of the pointwise table over a
rank-6 view with numpy broadcasting (``contract``, ``kernel``, ``lowering``)."""
