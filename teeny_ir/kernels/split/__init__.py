"""The ``split`` kernel family: ``graph.split`` into up to four parts as one
copying launch over the source, viewed as [OUTER, INNER] rows (``contract``,
``kernel``, ``lowering``)."""
