"""Type stub: ``ember.metrics`` is the module ``ember.training.metrics`` itself (see ``ember._namespaces``)."""

from ember.training.metrics import *
from ember.training.metrics import __all__ as __all__
