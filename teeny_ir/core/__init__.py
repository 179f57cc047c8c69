"""Standard-library-only pieces every layer may import: diagnostics, shape
expressions, derivations, the pointwise table and file output helpers."""
