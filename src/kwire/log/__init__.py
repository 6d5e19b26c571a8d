"""kwire.log."""

__all__: list[str] = []
