"""`python -m builder` and the `stackbuild` command."""

import gc
import sys


def entry() -> None:
    # What start-up builds (pydantic's model schemas above all) lives as long as the process: the
    # cyclic collector is paused while it is made and then kept off it (builder.cli._run), which
    # saves about 0.1 s of every command, at start-up and at exit.
    gc.disable()
    from builder.cli import main, terminate_on_sigterm

    terminate_on_sigterm()
    sys.exit(main())


if __name__ == "__main__":
    entry()
