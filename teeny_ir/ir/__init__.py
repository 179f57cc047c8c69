"""The IR layer on top of xDSL: the lazily registered context, hardened
parsing and printing, op-by-op verification, and assembly-format helpers
shared by the dialects."""
