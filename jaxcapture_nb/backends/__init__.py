"""How values leave Flax: one module per Flax API hooked (see README.md here)."""
