"""`python -m benchmarks`: see benchmarks/runner.py."""

import sys

from .runner import main

sys.exit(main())
