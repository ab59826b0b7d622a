"""``python -m jaxsr``: the same as the ``jaxsr`` command."""

from jaxsr.cli import console

if __name__ == "__main__":
    console()
