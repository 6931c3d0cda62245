"""What the tapes that record op calls share, below both of them (NumPy's, MLX's).

NumPy's tape engine lives in :mod:`ember.autodiff`, MLX's in :mod:`ember.backends.mlx`
(it imports ``mlx``, which only the MLX backend may). Both build a graph from the op
calls offered to them while they record, so the pieces they share sit below the
backends in the import layers (ARCHITECTURE.md, "Import layers"):

* :mod:`ember.recorded.graph`: the recorded graph (slots, nodes, the part between
  sources and targets);
* :mod:`ember.recorded.calls`: the engines recording now, the depth of nested recorded
  ops, and the recorder that offers one call to every engine;
* :mod:`ember.recorded.op_namespace`: the hook through which ``ember.ops`` makes itself
  known to code below it (the MLX ``mx.array`` operator patches).

:mod:`ember.autodiff.recording` starts and stops the engines and binds recorders into
``ember.ops``; it re-exports the public names of :mod:`ember.recorded.calls`.
"""
