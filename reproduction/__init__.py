"""The papers' reproduction: their published tables as data with citations, and the report that sets ours beside."""
