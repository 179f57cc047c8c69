"""The ``concat`` kernel family: ``graph.concat`` of up to four inputs as one
copying launch over the destination, viewed as [OUTER, INNER] rows (``contract``,
``kernel``, ``lowering``; ``rows`` is the row view it shares with ``split``)."""
