"""The ``sgd_update`` kernel family: ``graph.sgd_update``, one parameter's step of
``torch.optim.SGD`` (weight decay, optional momentum buffer) over the flat
parameter, safe to run in place (``contract``, ``kernel``, ``lowering``,
``tiles``)."""
