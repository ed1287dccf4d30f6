"""Every job hyporag's commands run, as a Python call with typed settings (the CLI only parses flags into them)."""
