"""Multiple-choice questions in: benchmarks by name (local copy first, hub loader behind it) and user files."""
