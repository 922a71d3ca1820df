"""Run the CLI as `python -m cudabench`."""

from cudabench.entry import main

if __name__ == "__main__":
    main()
