"""The op protocol for ``ember.ops.nn``.

Activations, convolutions, pooling, losses' primitives, fused recurrent ops: one stub per op (see
:mod:`ember.backends._spec`).
"""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class nn:
    """``ember.ops.nn``: activations and neural-network primitives (channels-last)."""

    def relu(x):
        """``max(x, 0)``: integers keep their dtype, bool gives ``int32`` (weak-scalar rule).

        The other activations cast integer and bool inputs to ``floatx()``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.relu([-1.0, 2.0])).tolist()
            [0.0, 2.0]
        """

    def relu6(x):
        """``min(max(x, 0), 6)``: integers keep their dtype, bool gives ``int32``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.relu6([-1.0, 3.0, 8.0])).tolist()
            [0.0, 3.0, 6.0]
        """

    def leaky_relu(x, negative_slope=0.2):
        """``x`` if positive else ``negative_slope * x`` (Keras default slope 0.2).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.leaky_relu([-1.0, 2.0])).astype(float).round(4).tolist()
            [-0.2, 2.0]
        """

    def elu(x, alpha=1.0):
        """``x`` if positive else ``alpha * (exp(x) - 1)``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.elu([-1.0, 2.0])).astype(float).round(4).tolist()
            [-0.6321, 2.0]
        """

    def selu(x):
        """Scaled ELU with Klambauer et al.'s constants.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.selu([-1.0, 1.0])).astype(float).round(4).tolist()
            [-1.1113, 1.0507]
        """

    def gelu(x, approximate=True):
        """GELU; tanh approximation when ``approximate`` (Keras default), else exact erf form.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.gelu([-1.0, 1.0])).astype(float).round(4).tolist()
            [-0.1588, 0.8412]
            >>> ops.to_numpy(ops.nn.gelu([-1.0, 1.0], approximate=False)).astype(float).round(4).tolist()
            [-0.1587, 0.8413]
        """

    def silu(x):
        """``x * sigmoid(x)`` (swish).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.silu([-1.0, 1.0])).astype(float).round(4).tolist()
            [-0.2689, 0.7311]
        """

    def sigmoid(x):
        """Logistic function, stable for large ``|x|``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.sigmoid([0.0, 2.0])).astype(float).round(4).tolist()
            [0.5, 0.8808]
        """

    def hard_sigmoid(x):
        """``relu6(x + 3) / 6`` (Keras 3).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.hard_sigmoid([-4.0, 0.0, 1.5])).astype(float).round(4).tolist()
            [0.0, 0.5, 0.75]
        """

    def softplus(x):
        """``log(1 + exp(x))``, stable.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.softplus([0.0, 1.0])).astype(float).round(4).tolist()
            [0.6931, 1.3133]
        """

    def softsign(x):
        """``x / (1 + |x|)``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.softsign([-1.0, 3.0])).tolist()
            [-0.5, 0.75]
        """

    def tanh(x):
        """Hyperbolic tangent.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.tanh([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.7616]
        """

    def lecun_tanh(x):
        """``1.7159 * tanh(0.666 * x)``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.lecun_tanh([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.9992]
        """

    def softmax(x, axis=-1):
        """Softmax, stable (shifted by the max).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.softmax([[0.0, 0.0]])).tolist()
            [[0.5, 0.5]]
            >>> ops.to_numpy(ops.nn.softmax([1.0, 2.0, 3.0])).astype(float).round(4).tolist()
            [0.09, 0.2447, 0.6652]
        """

    def log_softmax(x, axis=-1):
        """Log of softmax, stable.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.nn.log_softmax([0.0, 0.0])).astype(float).round(4).tolist()
            [-0.6931, -0.6931]
        """

    def conv(inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
        """N-d convolution (N = 1, 2, 3), cross-correlation as in Keras.

        ``inputs``: ``(batch, *spatial, in_channels)`` (channels_last) or
        ``(batch, in_channels, *spatial)``. ``kernel``: ``(*kernel_spatial,
        in_channels // groups, out_channels)``; ``groups`` is inferred as
        ``in_channels // kernel.shape[-2]``. ``strides``/``dilation_rate`` are ints
        or tuples; ``padding`` is ``"valid"`` or ``"same"`` (TF/Keras placement: extra
        padding on the right/bottom).

        Example:
            >>> from ember import ops
            >>> x = ops.reshape(ops.arange(5.0), (1, 5, 1))
            >>> k = ops.ones((2, 1, 1))
            >>> ops.to_numpy(ops.nn.conv(x, k)).tolist()
            [[[1.0], [3.0], [5.0], [7.0]]]
        """

    def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format="channels_last",
                       dilation_rate=1):
        """N-d transposed convolution (gradient of :func:`conv` w.r.t. its input), Keras semantics.

        ``kernel``: ``(*kernel_spatial, out_channels, in_channels)``. Output size per
        spatial axis follows Keras's ``compute_conv_transpose_output_shape``.

        Example:
            >>> from ember import ops
            >>> x = ops.ones((1, 2, 1))
            >>> k = ops.ones((2, 1, 1))
            >>> ops.to_numpy(ops.nn.conv_transpose(x, k)).tolist()
            [[[1.0], [2.0], [1.0]]]
        """

    def max_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
        """N-d max pooling (``strides`` defaults to ``pool_size``).

        Example:
            >>> from ember import ops
            >>> x = ops.reshape(ops.arange(4.0), (1, 4, 1))
            >>> ops.to_numpy(ops.nn.max_pool(x, 2)).tolist()
            [[[1.0], [3.0]]]
        """

    def avg_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
        """N-d average pooling; with ``"same"`` padding, padded cells are excluded from the mean.

        Example:
            >>> from ember import ops
            >>> x = ops.reshape(ops.arange(4.0), (1, 4, 1))
            >>> ops.to_numpy(ops.nn.avg_pool(x, 2)).tolist()
            [[[0.5], [2.5]]]
        """

    def moments(x, axes, keepdims=False):
        """``(mean, variance)`` over ``axes``.

        Example:
            >>> from ember import ops
            >>> mean, variance = ops.nn.moments([[1.0, 3.0], [5.0, 7.0]], axes=[0])
            >>> ops.to_numpy(mean).tolist(), ops.to_numpy(variance).tolist()
            ([3.0, 5.0], [4.0, 4.0])
        """

    def dense(inputs, kernel, bias=None):
        """A fully connected projection: ``matmul(inputs, kernel) + bias`` over the last axis of ``inputs``.

        ``inputs`` is ``(..., features)`` (at least one axis), ``kernel`` ``(features, units)``,
        ``bias`` ``(units,)`` or None; the result is ``(..., units)`` with the dtype rules of
        ``matmul`` and ``add``. Any other shape is a ValueError naming the argument.
        Differentiable with respect to every array argument.

        torch and MLX run one fused kernel (``torch.addmm``/``mx.addmm``: the product and the bias
        in one GEMM, one autograd node or compiled primitive) for floating operands of one dtype
        (MLX: float32 and the half types); NumPy runs the composite of :mod:`ember.ops.extra.composites`
        (``matmul``, then ``add``), which its tape records op by op. The fused sum may round
        differently from the two ops in the last bit.

        Example:
            >>> from ember import ops
            >>> x = ops.convert_to_tensor([[1.0, 2.0]])
            >>> ops.to_numpy(ops.nn.dense(x, ops.ones((2, 3)), ops.convert_to_tensor([0.0, 1.0, 2.0]))).tolist()
            [[3.0, 4.0, 5.0]]
        """

    def lstm(inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
             time_major=False):
        """A whole single-layer LSTM sequence in one op: ``(sequence_outputs, h, c)``.

        Weights in Keras's layout, gate order i, f, c, o along the last axis (torch's
        i, f, g, o): ``kernel`` ``(features, 4 * units)``, ``recurrent_kernel``
        ``(units, 4 * units)``, ``bias`` ``(4 * units,)`` or None. ``inputs`` is
        ``(batch, time, features)``, or ``(time, batch, features)`` with
        ``time_major``; ``initial_h``/``initial_c`` are ``(batch, units)``. Each step:
        ``z = x_t @ kernel + h @ recurrent_kernel + bias``; ``i, f, g, o = split(z, 4)``;
        ``c = sigmoid(f) * c + sigmoid(i) * tanh(g)``; ``h = sigmoid(o) * tanh(c)``
        (the activations are fixed). ``sequence_outputs`` holds every step's ``h`` in
        the layout of ``inputs``; with ``go_backwards`` the steps run from the last to
        the first and the outputs are in processing order (Keras's ``go_backwards``).
        ``h``/``c`` are the final states. Every array has one floating dtype.
        Differentiable with respect to every array argument.

        torch runs its fused LSTM kernel (``torch.lstm``: oneDNN on the CPU, cuDNN on
        CUDA); NumPy a NumPy loop with its own VJP rule; MLX the composite written
        with ``ember.ops`` (:mod:`ember.ops.extra.composites`), which tapes and
        ``mx.compile`` see op by op.

        Example:
            >>> from ember import ops
            >>> batch, steps, features, units = 2, 3, 4, 5
            >>> x = ops.ones((batch, steps, features))
            >>> h0 = c0 = ops.zeros((batch, units))
            >>> outputs, h, c = ops.nn.lstm(x, h0, c0, ops.ones((features, 4 * units)), ops.zeros((units, 4 * units)))
            >>> ops.shape(outputs), ops.shape(h), ops.shape(c)
            ((2, 3, 5), (2, 5), (2, 5))
        """

    def gru(inputs, initial_h, kernel, recurrent_kernel, bias=None, *, go_backwards=False, time_major=False):
        """A whole single-layer GRU sequence (Keras's ``reset_after=True`` variant): ``(sequence_outputs, h)``.

        Weights in Keras's layout, gate order z, r, h along the last axis: ``kernel``
        ``(features, 3 * units)``, ``recurrent_kernel`` ``(units, 3 * units)``, ``bias``
        ``(2, 3 * units)`` (row 0 the input bias, row 1 the recurrent bias) or None.
        Layouts, ``go_backwards`` and dtypes as for :func:`lstm`. Each step:
        ``x_z, x_r, x_h = split(x_t @ kernel + bias[0])``, ``r_z, r_r, r_h = split(h @
        recurrent_kernel + bias[1])``; ``z = sigmoid(x_z + r_z)``, ``r = sigmoid(x_r +
        r_r)``, ``h~ = tanh(x_h + r * r_h)``; ``h = z * h + (1 - z) * h~``. This is
        ``torch.nn.GRU``'s formulation (its gate order r, z, n is reordered inside).
        Differentiable with respect to every array argument.

        torch runs its fused GRU kernel (``torch.gru``; cuDNN on CUDA); NumPy and MLX run
        the composite of :mod:`ember.ops.extra.composites`.

        Example:
            >>> from ember import ops
            >>> batch, steps, features, units = 2, 3, 4, 5
            >>> x = ops.ones((batch, steps, features))
            >>> h0 = ops.zeros((batch, units))
            >>> outputs, h = ops.nn.gru(x, h0, ops.ones((features, 3 * units)), ops.zeros((units, 3 * units)))
            >>> ops.shape(outputs), ops.shape(h)
            ((2, 3, 5), (2, 5))
        """

    def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                              flash_attention=None, attn_logits_soft_cap=None):
        """Scaled dot-product attention, as ``keras.ops.dot_product_attention``: ``(B, T, N, Hv)``.

        ``query`` ``(B, T, N, H)``, ``key`` ``(B, S, K, H)``, ``value`` ``(B, S, K, Hv)``, with
        ``N`` a multiple of ``K`` (grouped-query attention: query head ``n`` reads key/value
        head ``n // (N // K)``). Per head: ``logits = scale * q k^T`` (``scale`` defaults to
        ``1 / sqrt(H)``), ``+ bias`` (additive, broadcast to ``(B, N, T, S)``), then
        ``attn_logits_soft_cap * tanh(logits / attn_logits_soft_cap)`` when the cap is given;
        positions where the boolean ``mask`` (broadcast to ``(B, N, T, S)``) is False, and with
        ``is_causal`` positions ``j > i`` (top-left aligned), get ``-1e9`` (``-3e4`` in float16),
        not ``-inf``, so a fully masked row gets uniform weights; ``softmax`` over ``S``; ``@ v``.
        Differentiable with respect to ``query``, ``key``, ``value`` and ``bias``.

        torch runs ``torch.nn.functional.scaled_dot_product_attention`` (``is_causal`` without
        a T x S mask when no other mask is given), MLX ``mx.fast.scaled_dot_product_attention``
        (``mask="causal"`` when T == S) for float32/float16/bfloat16; NumPy (and
        ``flash_attention=False``, a soft cap, MLX float64) the unfused computation.
        ``flash_attention=True`` on NumPy raises ``NotImplementedError``.

        Example:
            >>> from ember import ops
            >>> q = ops.ones((1, 2, 1, 4))
            >>> v = ops.reshape(ops.arange(6.0), (1, 3, 1, 2))
            >>> out = ops.nn.dot_product_attention(q, ops.ones((1, 3, 1, 4)), v, is_causal=True)
            >>> ops.to_numpy(out)[0, :, 0].tolist()
            [[0.0, 1.0], [1.0, 2.0]]
        """

    def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
        """Layer normalization over the axes ``axis`` (an int or a tuple): an array of x's shape and dtype.

        ``y = (x - mean) / sqrt(variance + epsilon) * gamma + beta``, with ``mean`` and the biased
        ``variance`` over ``axis`` for each position of the other axes (Keras's
        ``LayerNormalization``). ``gamma`` and ``beta`` (optional) have x's sizes on the
        normalized axes, in axis order (``(x.shape[-1],)`` for ``axis=-1``), and are cast to x's
        dtype. Differentiable with respect to ``x``, ``gamma`` and ``beta``.

        torch runs ``torch.nn.functional.layer_norm`` and MLX ``mx.fast.layer_norm`` (MLX
        float64: the unfused computation), the normalized axes moved to the end first when
        they are not the trailing ones; NumPy the composite of :mod:`ember.ops.extra.normalization`.

        Example:
            >>> from ember import ops
            >>> y = ops.nn.layer_norm(ops.convert_to_tensor([[1.0, 3.0]]), epsilon=0.0)
            >>> ops.to_numpy(y).tolist()
            [[-1.0, 1.0]]
        """

    def fused_batch_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3, moving_mean=None, moving_variance=None,
                         momentum=0.99):
        """Training-mode batch normalization: ``(outputs, mean, variance)``.

        ``mean`` and the biased ``variance`` are the batch statistics of each feature of
        ``axis`` (an int) over every other axis, shape ``(x.shape[axis],)``;
        ``outputs = (x - mean) / sqrt(variance + epsilon) * gamma + beta`` with ``gamma`` and
        ``beta`` (optional, shape ``(x.shape[axis],)``) cast to x's dtype. ``outputs`` is
        differentiable with respect to ``x``, ``gamma`` and ``beta`` (through the statistics
        too); ``mean`` and ``variance`` come out of the gradient (for running averages, as
        Keras's variable assignment).

        With ``moving_mean`` and ``moving_variance`` (shape ``(x.shape[axis],)``, e.g. a
        BatchNormalization layer's buffers), ``mean`` and ``variance`` are instead the updated
        moving averages ``momentum * moving + (1 - momentum) * batch`` (Keras's convention), in
        the moving averages' dtype: torch updates them inside the same kernel.

        torch runs one ``torch.native_batch_norm`` call (the statistics and the normalization
        in one kernel, one autograd node), except when each feature has fewer than two values;
        NumPy and MLX the composite of :mod:`ember.ops.extra.normalization`.

        Example:
            >>> from ember import ops
            >>> x = ops.convert_to_tensor([[0.0, 1.0], [2.0, 5.0]])
            >>> y, mean, variance = ops.nn.fused_batch_norm(x, epsilon=0.0)
            >>> ops.to_numpy(y).tolist(), ops.to_numpy(mean).tolist(), ops.to_numpy(variance).tolist()
            ([[-1.0, -1.0], [1.0, 1.0]], [1.0, 3.0], [1.0, 4.0])
            >>> _, moving_mean, moving_variance = ops.nn.fused_batch_norm(
            ...     x, moving_mean=ops.zeros((2,)), moving_variance=ops.ones((2,)), momentum=0.5)
            >>> ops.to_numpy(moving_mean).tolist(), ops.to_numpy(moving_variance).tolist()
            ([0.5, 1.5], [1.0, 2.5])
        """
