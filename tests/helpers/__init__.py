"""What several test folders share: the checkout's root, and `ladder` started as a terminal does
(`terminal`)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout: a child process started with it on PYTHONPATH imports this oracleladder
