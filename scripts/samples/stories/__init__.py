"""One module per sample story (or family of small ones)."""
