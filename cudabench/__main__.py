"""Run the CLI as `python -m cudabench`."""

from cudabench.cli import main

if __name__ == "__main__":
    main()
