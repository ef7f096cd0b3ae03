"""`python -m bot` is the `switchboard` command."""

import sys

from bot.cli import main

sys.exit(main())
