"""kwire.records."""

__all__: list[str] = []
