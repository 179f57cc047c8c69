"""Kernel families: the registry, their contracts, Triton sources, lowerings
and tile choices. One subpackage per family."""
