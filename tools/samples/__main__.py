import sys

from tools.samples.regenerate import main

sys.exit(main())
