"""hyporag.eval."""
