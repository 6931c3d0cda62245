"""Spiking neurons: surrogate gradients, LIF / ALIF / synaptic cells and layers, encoders, losses.

* :mod:`~ember.layers.spiking.surrogates`: Heaviside spikes with surrogate derivatives
  (``fast_sigmoid``, ``atan``, ``straight_through``, ``triangle``);
* :class:`LIFCell` / :class:`LIF`, :class:`ALIFCell` / :class:`ALIF`,
  :class:`SynapticCell` / :class:`Synaptic`: RNN cells (and ``RNN`` layers) of spiking
  neurons, dense or on a wiring (:mod:`ember.layers.spiking.cell` has the shared equations);
* :mod:`~ember.layers.spiking.encoders`: rate (Bernoulli), latency and delta spike codes;
* :mod:`~ember.layers.spiking.losses`: spike-count / rate cross-entropy and first-spike losses;
* :func:`spike_times`: a spike train's events as ``(batch, step, neuron)`` rows.

The oracle is snntorch (``Leaky``, ``RLeaky``, ``Synaptic``, ``surrogate``, ``spikegen``,
``functional``): the tests compare spikes, membranes and gradients with it.
"""

from ember.layers.spiking import encoders, losses, raster, surrogates
from ember.layers.spiking.alif import ALIF, ALIFCell
from ember.layers.spiking.cell import SpikingCell
from ember.layers.spiking.lif import LIF, LIFCell
from ember.layers.spiking.raster import spike_times
from ember.layers.spiking.surrogates import Surrogate
from ember.layers.spiking.synaptic import Synaptic, SynapticCell

__all__ = ["ALIF", "ALIFCell", "LIF", "LIFCell", "SpikingCell", "Surrogate", "Synaptic", "SynapticCell",
           "encoders", "losses", "raster", "spike_times", "surrogates"]
