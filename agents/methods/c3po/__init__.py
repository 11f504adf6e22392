"""C-3PO agents (docs/c3po.md)."""
