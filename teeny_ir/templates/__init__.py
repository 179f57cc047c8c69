"""Triton kernel templates, one module per kernel family.

Each module defines ``SOURCE``: the text of a complete Python module as a
``string.Template`` whose only placeholder is ``$kernel_name``. Rendering it
gives one ``@triton.jit`` function with the family's ABI arguments (in the
order of ``teeny_ir.kernel_families``) followed by its constexprs. The text is
data here: nothing in this package imports triton.
"""
