"""The ``attention_backward`` kernel family: ``graph.attention_backward`` as one
deterministic FlashAttention-2 style launch that recomputes the probabilities
from ``q``, ``k`` and the saved row statistic ``lse`` (never an N x M matrix in
memory) and writes ``dq``, ``dk`` and ``dv`` without atomics (``contract``,
``kernel``, ``lowering``, ``tiles``)."""
