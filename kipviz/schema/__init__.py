"""What the protocol is: the kit's message definitions and the facts every layer reads (see
docs/architecture.md)."""
