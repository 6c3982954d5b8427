"""`python -m prefill`."""

from prefill.cli import main

raise SystemExit(main())
