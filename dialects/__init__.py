"""teeny_ir's xDSL dialects, one per module or package (``derive``, ``graph``,
``kernel``): import the module you need; nothing loads here."""
