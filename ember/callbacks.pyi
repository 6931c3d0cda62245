"""Type stub: ``ember.callbacks`` is the module ``ember.training.callbacks`` itself (see ``ember._namespaces``)."""

from ember.training.callbacks import *
from ember.training.callbacks import __all__ as __all__
