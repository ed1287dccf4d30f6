"""hyporag.optimizers."""
