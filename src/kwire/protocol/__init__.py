"""kwire.protocol."""

__all__: list[str] = []
