"""`python -m hyporag.cli ...`: the same as the `hyporag` command."""

import sys

from hyporag.cli import main

sys.exit(main())
