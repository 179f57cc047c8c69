"""The ``attention`` kernel family: ``graph.attention``, a fused FlashAttention-style
forward (one launch per attention: each program keeps a block of queries, walks
the keys in blocks with an online softmax, and writes ``o`` and the row
log-sum-exp ``lse``; the N x M score matrix never reaches memory) over q, k, v
and o in either layout (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
