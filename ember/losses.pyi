"""Type stub: ``ember.losses`` is the module ``ember.training.losses`` itself (see ``ember._namespaces``)."""

from ember.training.losses import *
from ember.training.losses import __all__ as __all__
