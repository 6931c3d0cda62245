"""Recurrent layers: the cell protocol, RNN, SimpleRNN, LSTM, GRU, Bidirectional,
TimeDistributed and Masking (see :mod:`ember.layers.rnn.cell` for the protocol)."""

from ember.layers.rnn.bidirectional import Bidirectional
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.gru import GRU, GRUCell
from ember.layers.rnn.lstm import LSTM, LSTMCell
from ember.layers.rnn.masking import Masking
from ember.layers.rnn.rnn import RNN
from ember.layers.rnn.simple_rnn import SimpleRNN, SimpleRNNCell
from ember.layers.rnn.time_distributed import TimeDistributed

__all__ = [
    "Bidirectional",
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "Masking",
    "RNN",
    "RNNCell",
    "SimpleRNN",
    "SimpleRNNCell",
    "TimeDistributed",
]
