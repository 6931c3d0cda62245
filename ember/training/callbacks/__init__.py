"""``ember.callbacks``: hooks into ``fit``/``evaluate``/``predict`` (Keras names and arguments).

This package is the namespace's one home: ``ember.callbacks`` is this module object (see
:mod:`ember._namespaces`).

Example:
    >>> import ember
    >>> stop = ember.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)
    >>> stop.patience, stop.mode
    (3, 'min')
"""

from ember.training.callbacks.backup_and_restore import BackupAndRestore
from ember.training.callbacks.callback import Callback
from ember.training.callbacks.callback_list import BatchLogs, CallbackList
from ember.training.callbacks.csv_logger import CSVLogger
from ember.training.callbacks.early_stopping import EarlyStopping
from ember.training.callbacks.history import History
from ember.training.callbacks.lambda_callback import LambdaCallback
from ember.training.callbacks.learning_rate_scheduler import LearningRateScheduler
from ember.training.callbacks.model_checkpoint import ModelCheckpoint
from ember.training.callbacks.progbar import Progbar
from ember.training.callbacks.progbar_logger import ProgbarLogger
from ember.training.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from ember.training.callbacks.tensorboard import TensorBoard
from ember.training.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = [
    "BackupAndRestore",
    "BatchLogs",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "Progbar",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "TensorBoard",
    "TerminateOnNaN",
]
