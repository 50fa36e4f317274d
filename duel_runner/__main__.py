import sys

from duel_runner.cli import main

sys.exit(main())
