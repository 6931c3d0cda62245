"""Compatibility path: the recorded graph moved to :mod:`ember.recorded.graph` (below the backends).

Example:
    >>> from ember.autodiff.graph import RecordedGraph
    >>> RecordedGraph.__module__
    'ember.recorded.graph'
"""

from ember.recorded.graph import Node, RecordedGraph

__all__ = ["Node", "RecordedGraph"]
