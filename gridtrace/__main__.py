"""``python -m gridtrace`` runs the command line."""

import sys

from gridtrace.cli import main

sys.exit(main())
