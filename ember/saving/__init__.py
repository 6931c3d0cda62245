"""``ember.saving``: config serialization by registered name (and, later, checkpoints)."""

from ember.saving.serialization import register_serializable

__all__ = ["register_serializable"]
