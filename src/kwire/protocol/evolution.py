"""Public entry point of the spec evolution checker (``kwire spec-check``)."""

from kwire.protocol._evolution import EvolutionReport, Finding, check_evolution, compare_messages

__all__ = ["EvolutionReport", "Finding", "check_evolution", "compare_messages"]
