"""``python -m smkit.cli``: the same as the ``smkit`` console script."""

from smkit.cli import main

main()
