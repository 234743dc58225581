"""`python -m controller` is the same as `hermes-fleet`."""

import sys

from controller.cli import main

sys.exit(main())
