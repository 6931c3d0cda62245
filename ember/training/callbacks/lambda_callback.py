"""``LambdaCallback``: a callback from plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.training.callbacks.callback import Callback

_HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_begin", "on_train_end", "on_train_batch_begin",
          "on_train_batch_end", "on_batch_begin", "on_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class LambdaCallback(Callback):
    """Each keyword names a hook (``on_epoch_end=lambda epoch, logs: ...``, ``on_train_begin=lambda logs: ...``).

    Epoch and batch hooks take ``(index, logs)``; begin/end hooks take ``(logs)``.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> seen = []
        >>> cb = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
        >>> _ = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=3, verbose=0, callbacks=[cb])
        >>> seen
        [0, 1, 2]
    """

    def __init__(self, **hooks: Callable) -> None:
        super().__init__()
        unknown = set(hooks) - set(_HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {sorted(unknown)}; valid hooks are {list(_HOOKS)}")
        for name, fn in hooks.items():
            if fn is not None and not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be callable, received {fn!r}")
        self._hooks = {k: v for k, v in hooks.items() if v is not None}


def _make(hook: str) -> Callable:
    takes_index = "batch" in hook or "epoch" in hook

    def with_index(self: LambdaCallback, index: int, logs: Any = None) -> None:
        fn = self._hooks.get(hook)
        if fn is not None:
            fn(index, logs)
        elif hook in ("on_train_batch_begin", "on_train_batch_end"):
            getattr(Callback, hook)(self, index, logs)

    def without_index(self: LambdaCallback, logs: Any = None) -> None:
        fn = self._hooks.get(hook)
        if fn is not None:
            fn(logs)

    method = with_index if takes_index else without_index
    method.__name__ = hook
    return method


for _hook in _HOOKS:
    setattr(LambdaCallback, _hook, _make(_hook))
