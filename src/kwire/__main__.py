"""``python -m kwire`` runs the ``kwire`` command."""

from kwire.cli import main

raise SystemExit(main())
