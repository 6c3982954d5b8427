"""The frozen app's entry point: the same `main` the `prefill` console script runs."""

from prefill.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
