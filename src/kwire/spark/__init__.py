"""kwire.spark."""

__all__: list[str] = []
