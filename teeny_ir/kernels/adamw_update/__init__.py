"""The ``adamw_update`` kernel family: ``graph.adamw_update``, one parameter's step
of ``torch.optim.AdamW`` (decoupled weight decay, bias correction from the step
count) over the flat parameter, safe to run in place (``contract``, ``kernel``,
``lowering``; its tiles are ``sgd_update.tiles``)."""
