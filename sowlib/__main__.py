"""``python -m sowlib`` runs the command line."""

from sowlib.cli import main

raise SystemExit(main())
