"""The ``cross_entropy_backward`` kernel family: ``graph.cross_entropy_backward``,
the gradient ``(softmax(logits) - onehot(targets)) * g / N`` of the mean softmax
cross-entropy, with the cross_entropy family's status output for the targets
(``contract``, ``kernel``, ``lowering``)."""
