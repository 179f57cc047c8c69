"""teeny_ir's passes: one pass per module, file name = pass name with '-' -> '_'."""
