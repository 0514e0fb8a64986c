"""``python -m xmodal`` runs the command line."""

from xmodal.cli import main

main()
