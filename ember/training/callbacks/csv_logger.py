"""``CSVLogger``: write every epoch's logs as a row of a CSV file.
"""

from __future__ import annotations

import csv
import os
from typing import Any

from ember import distribute
from ember.training.callbacks.callback import Callback


class CSVLogger(Callback):
    """Args: filename; separator (``","``); append (add to an existing file instead of overwriting).

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> path = os.path.join(tempfile.mkdtemp(), "log.csv")
        >>> _ = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[callbacks.CSVLogger(path)])
        >>> open(path).read().splitlines()[0]
        'epoch,loss'
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = bool(append)
        self.keys: list[str] | None = None
        self._file: Any = None
        self._writer: Any = None

    def on_train_begin(self, logs: Any = None) -> None:
        if not distribute.is_main_process():  # ember.distribute: only the main rank writes the file
            return
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        try:
            self._file = open(self.filename, "a" if self.append else "w", newline="")
        except OSError as error:
            directory = os.path.dirname(os.path.abspath(self.filename))
            reason = f"the directory {directory!r} does not exist" if not os.path.isdir(directory) else error.strerror
            raise type(error)(error.errno, f"CSVLogger: cannot open {self.filename!r} for writing: {reason}") from None
        self._has_header = exists
        self.keys = None
        self._writer = None

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._file is None:  # not the main process (ember.distribute)
            return
        logs = dict(logs or {})
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys, delimiter=self.separator,
                                          extrasaction="ignore")
            if not self._has_header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update({k: logs.get(k, "NA") for k in self.keys})
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: Any = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
