"""Public entry point of the spec evolution checker (``kwire spec-check``).

Approach: re-exports ``check_evolution`` (two spec directories in, an ``EvolutionReport`` of
``Finding``s out) and ``compare_messages`` from ``kwire.protocol._evolution``, where the rules live.
"""

from kwire.protocol._evolution import EvolutionReport, Finding, check_evolution, compare_messages

__all__ = ["EvolutionReport", "Finding", "check_evolution", "compare_messages"]
