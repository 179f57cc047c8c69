"""The ``fused_reduce`` kernel family: a pointwise program and its trailing sum
or mean in one launch (see ``contract``)."""
