"""The ``slice`` kernel family: ``graph.slice`` (a strided slice of up to six
dimensions, steps of either sign) as one gathering launch over the destination
(``contract``, ``kernel``, ``lowering``). A slice that keeps every element is a
``kernel.reshape`` view instead, with no launch."""
