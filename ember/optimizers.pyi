"""Type stub: ``ember.optimizers`` is the module ``ember.training.optimizers`` itself (see ``ember._namespaces``)."""

from ember.training.optimizers import *
from ember.training.optimizers import __all__ as __all__
from ember.training.optimizers import schedules as schedules
