"""``python -m jaxsr``: the same as the ``jaxsr`` command."""

import sys

from jaxsr.cli import main

if __name__ == "__main__":
    sys.exit(main())
