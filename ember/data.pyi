"""Type stub: ``ember.data`` is the module ``ember.training.data`` itself (see ``ember._namespaces``)."""

from ember.training.data import *
from ember.training.data import __all__ as __all__
