"""teeny_ir's xDSL dialects, one per module (import the module you need; nothing loads here)."""
