"""hyporag.programs."""
