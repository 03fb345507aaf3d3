"""``python -m stellate.cli``."""

from stellate.cli import main

raise SystemExit(main())
