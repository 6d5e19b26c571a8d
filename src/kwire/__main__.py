"""``python -m kwire`` runs the ``kwire`` command.

Approach: nothing of its own: it calls ``kwire.cli.main`` (the same entry point as the installed
``kwire`` script) and exits with its status.
"""

from kwire.cli import main

raise SystemExit(main())
