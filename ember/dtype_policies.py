"""Dtype policies (Keras's ``DTypePolicy``): which dtype a layer computes in and which it stores.

A policy has a ``name``, a ``compute_dtype`` and a ``variable_dtype``. A plain dtype name
(``"float32"``, ``"float64"``, ``"bfloat16"``) gives one dtype for both; the two mixed
policies keep variables in ``float32`` and compute in a 16-bit type:

==================  ===============  ================
name                compute_dtype    variable_dtype
==================  ===============  ================
``"float32"``       float32          float32
``"mixed_float16"`` float16          float32
``"mixed_bfloat16"`` bfloat16        float32
==================  ===============  ================

The global policy (:func:`set_global_policy`, Keras's ``set_dtype_policy``) is the policy
of every layer constructed afterwards without ``dtype=``; a layer records it in its config,
as Keras does, so a model keeps its policy when saved and loaded. Until a policy is set the
global policy is ``floatx()``'s.

Example:
    >>> from ember import dtype_policies
    >>> policy = dtype_policies.DTypePolicy("mixed_bfloat16")
    >>> policy.name, policy.compute_dtype, policy.variable_dtype
    ('mixed_bfloat16', 'bfloat16', 'float32')
    >>> dtype_policies.DTypePolicy("float64").compute_dtype
    'float64'
    >>> try:
    ...     dtype_policies.DTypePolicy("mixed_float64")
    ... except ValueError as error:
    ...     print(str(error).split(";")[0])
    DTypePolicy: unknown policy 'mixed_float64'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ember import dtypes
from ember.serialization import register_serializable

MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}

_global_policy: DTypePolicy | None = None


@register_serializable("ember")
class DTypePolicy:
    """A dtype policy: the dtype of a layer's computations and of its variables.

    Args:
        name: ``"mixed_float16"``, ``"mixed_bfloat16"`` or a dtype name (``"float32"``, ``"float64"``,
            ``"bfloat16"``, ``"int64"`` for integer-valued preprocessing layers, aliases accepted);
            None is ``floatx()``.

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: an unknown policy name.

    Example:
        >>> from ember.dtype_policies import DTypePolicy
        >>> DTypePolicy("mixed_float16")
        <DTypePolicy "mixed_float16">
        >>> DTypePolicy("mixed_float16") == DTypePolicy("mixed_float16"), DTypePolicy().name
        (True, 'float32')
    """

    def __init__(self, name: str | None = None) -> None:
        if name is None:
            name = dtypes.floatx()
        if not isinstance(name, str):
            raise TypeError(f"DTypePolicy: name must be a string such as 'mixed_float16', received {name!r}")
        if name in MIXED:
            self._name, self._compute, self._variable = name, MIXED[name], "float32"
            return
        try:
            dtype = dtypes.standardize_dtype(name, "DTypePolicy: name")
        except TypeError:
            dtype = None
        if dtype is None:
            raise ValueError(f"DTypePolicy: unknown policy {name!r}; expected a dtype name such as "
                             f"{dtypes.FLOATING} or one of {tuple(MIXED)}")
        self._name = self._compute = self._variable = dtype

    @property
    def name(self) -> str:
        """The policy's name (``"mixed_bfloat16"``, ``"float32"``)."""
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype layers compute in (their inputs and weights are cast to it)."""
        return self._compute

    @property
    def variable_dtype(self) -> str:
        """The dtype layers create their variables in."""
        return self._variable

    @property
    def quantization_mode(self) -> str | None:
        """The quantization mode (``"int8"``, ...) of a quantized policy; None for a float policy."""
        return None

    @property
    def is_mixed(self) -> bool:
        """Whether computation and variables use different dtypes."""
        return self._compute != self._variable

    def get_config(self) -> dict:
        """``{"name": ...}`` (Keras's config)."""
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict) -> DTypePolicy:
        """Inverse of :meth:`get_config`."""
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DTypePolicy) and other.quantization_mode is None and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self._name}">'


Policy = DTypePolicy  # Keras's legacy name (keras.mixed_precision.Policy)


def get(identifier: Any, argument: str = "dtype") -> DTypePolicy:
    """The policy for a name, a policy, Keras's serialized ``DTypePolicy`` dict or a native dtype.

    None gives the global policy.

    Raises:
        TypeError/ValueError: anything else, naming ``argument``.

    Example:
        >>> from ember import dtype_policies
        >>> dtype_policies.get({"class_name": "DTypePolicy", "config": {"name": "mixed_bfloat16"}}).compute_dtype
        'bfloat16'
    """
    if identifier is None:
        return global_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict) and identifier.get("class_name") in _QUANTIZED_CLASSES:
        config = identifier.get("config")
        if not isinstance(config, dict) or "mode" not in config:
            raise ValueError(f"{argument}: expected a {identifier['class_name']} config with 'mode' and "
                             f"'source_name', received {identifier!r}")
        return _QUANTIZED_CLASSES[identifier["class_name"]].from_config(config)
    if isinstance(identifier, dict) and identifier.get("class_name") == "DTypePolicyMap":
        return DTypePolicyMap.from_config(identifier.get("config") or {})
    if isinstance(identifier, str) and identifier.startswith(QUANTIZATION_MODES) and "_from_" in identifier:
        return quantized_policy(identifier, argument)
    if isinstance(identifier, dict):
        config = identifier.get("config")
        if not isinstance(config, dict) or "name" not in config:
            raise ValueError(f"{argument}: expected a DTypePolicy config {{'class_name': 'DTypePolicy', "
                             f"'config': {{'name': ...}}}}, received {identifier!r}")
        identifier = config["name"]
    if not isinstance(identifier, str):
        try:
            identifier = dtypes.standardize_dtype(identifier, argument)
        except TypeError:
            raise TypeError(f"{argument}: expected a dtype policy (a name such as 'mixed_bfloat16' or "
                            f"'float32', or a DTypePolicy), received {identifier!r}") from None
    try:
        return DTypePolicy(identifier)
    except ValueError as error:
        raise ValueError(f"{argument}: {error}") from None


def set_dtype_policy(policy: Any) -> None:
    """Set the global policy: layers constructed afterwards without ``dtype=`` use it.

    Args:
        policy: a policy name (``"mixed_float16"``, ``"mixed_bfloat16"``, ``"float32"``) or a
            :class:`DTypePolicy`; None goes back to ``floatx()``'s policy.

    Example:
        >>> from ember import dtype_policies, layers
        >>> dtype_policies.set_dtype_policy("mixed_bfloat16")
        >>> layers.Dense(2).dtype_policy
        <DTypePolicy "mixed_bfloat16">
        >>> dtype_policies.set_dtype_policy(None)
        >>> layers.Dense(2).dtype_policy
        <DTypePolicy "float32">
    """
    global _global_policy
    _global_policy = None if policy is None else get(policy, "set_dtype_policy: policy")


def dtype_policy() -> DTypePolicy:
    """The global policy (``floatx()``'s until :func:`set_dtype_policy` sets one)."""
    return _global_policy if _global_policy is not None else DTypePolicy(dtypes.floatx())


def explicit_global_policy() -> DTypePolicy | None:
    """The policy :func:`set_dtype_policy` set (None when none was set): what layers record."""
    return _global_policy


# Keras's ``keras.mixed_precision`` names.
set_global_policy = set_dtype_policy
global_policy = dtype_policy
FloatDTypePolicy = DTypePolicy  # Keras's name for a policy of floating dtypes


QUANTIZATION_MODES = ("int8", "float8", "int4", "gptq", "awq")  # Keras's modes (Ember implements int8)


@register_serializable("ember")
class QuantizedDTypePolicy(DTypePolicy):
    """The policy of a quantized layer (Keras's): ``"<mode>_from_<source policy>"``.

    The layer stores its quantized weights (int8 kernel and float scales for ``"int8"``) and
    computes in the source policy's compute dtype.

    Args:
        mode: the quantization mode, one of :data:`QUANTIZATION_MODES` (layers implement ``"int8"``).
        source_name: the float policy the layer was quantized from; None is the global policy's.

    Raises:
        ValueError: an unknown mode, or ``"int8"`` over a float16 compute dtype (as Keras).

    Example:
        >>> from ember.dtype_policies import QuantizedDTypePolicy, get
        >>> policy = QuantizedDTypePolicy("int8", "float32")
        >>> policy.name, policy.quantization_mode, policy.compute_dtype
        ('int8_from_float32', 'int8', 'float32')
        >>> get("int8_from_mixed_bfloat16").compute_dtype
        'bfloat16'
    """

    def __init__(self, mode: str, source_name: str | None = None) -> None:
        source = DTypePolicy(dtype_policy().name if source_name is None else source_name)
        if mode not in QUANTIZATION_MODES:
            raise ValueError(f"QuantizedDTypePolicy: invalid quantization mode {mode!r}; expected one of "
                             f"{QUANTIZATION_MODES}")
        if mode == "int8" and source.compute_dtype == "float16":
            raise ValueError("QuantizedDTypePolicy: quantization mode 'int8' does not work well with compute "
                             "dtype 'float16' (as in Keras); use 'mixed_bfloat16' or 'float32'")
        self._mode, self._source_name = mode, source.name
        self._name = f"{mode}_from_{source.name}"
        self._compute, self._variable = source.compute_dtype, source.variable_dtype

    @property
    def quantization_mode(self) -> str | None:
        """The quantization mode (``"int8"``)."""
        return self._mode

    @property
    def source_name(self) -> str:
        """The float policy quantized from (``"float32"``, ``"mixed_bfloat16"``)."""
        return self._source_name

    def get_config(self) -> dict:
        """``{"mode", "source_name"}`` (Keras's config)."""
        return {"mode": self._mode, "source_name": self._source_name}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, QuantizedDTypePolicy) and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<{type(self).__name__} "{self._name}">'


@register_serializable("ember")
class QuantizedFloat8DTypePolicy(QuantizedDTypePolicy):
    """Keras's float8 policy (``"float8_from_<source>"``, with the length of its amax history).

    Ember's layers do not implement float8 training yet: ``layer.quantize("float8")`` raises a
    ``NotImplementedError``; the policy exists so configs that name it can be read and written.

    Example:
        >>> from ember.dtype_policies import QuantizedFloat8DTypePolicy
        >>> QuantizedFloat8DTypePolicy("float8", "float32").get_config()
        {'mode': 'float8', 'source_name': 'float32', 'amax_history_length': 1024}
    """

    default_amax_history_length = 1024

    def __init__(self, mode: str, source_name: str | None = None, amax_history_length: int = 1024) -> None:
        super().__init__(mode, source_name)
        if isinstance(amax_history_length, bool) or not isinstance(amax_history_length, int):
            raise TypeError(f"QuantizedFloat8DTypePolicy: amax_history_length must be an int, received "
                            f"{amax_history_length!r}")
        self._amax_history_length = amax_history_length

    @property
    def amax_history_length(self) -> int:
        """The length of the amax history window (float8 scaling)."""
        return self._amax_history_length

    def get_config(self) -> dict:
        return {**super().get_config(), "amax_history_length": self._amax_history_length}


_QUANTIZED_CLASSES: dict[str, type[QuantizedDTypePolicy]] = {
    "QuantizedDTypePolicy": QuantizedDTypePolicy, "QuantizedFloat8DTypePolicy": QuantizedFloat8DTypePolicy}


def quantized_policy(name: str, argument: str = "dtype") -> QuantizedDTypePolicy:
    """The quantized policy named ``"<mode>_from_<source>"`` (``"int8_from_float32"``).

    Raises:
        ValueError: a name that is not ``<mode>_from_<source>`` with a known mode and source.

    Example:
        >>> from ember.dtype_policies import quantized_policy
        >>> quantized_policy("int8_from_float32")
        <QuantizedDTypePolicy "int8_from_float32">
    """
    mode, sep, source = name.partition("_from_")
    if not sep or mode not in QUANTIZATION_MODES or not source:
        raise ValueError(f"{argument}: cannot read {name!r} as a quantized policy '<mode>_from_<source>' with a "
                         f"mode in {QUANTIZATION_MODES}")
    cls = QuantizedFloat8DTypePolicy if mode == "float8" else QuantizedDTypePolicy
    try:
        return cls(mode, source)
    except ValueError as error:
        raise ValueError(f"{argument}: {error}") from None


@register_serializable("ember")
class DTypePolicyMap(DTypePolicy):
    """Keras's map from layer paths to policies (exact path first, else the one key that matches as a
    regular expression, else ``default_policy``).

    Args:
        default_policy: the policy of paths no key matches; None is the global policy.
        policy_map: ``{path or regex: policy}``.

    Raises:
        ValueError: a path that matches several keys, a key set twice, a map as the default.

    Example:
        >>> from ember.dtype_policies import DTypePolicyMap
        >>> policies = DTypePolicyMap("float32")
        >>> policies["encoder/dense"] = "int8_from_float32"
        >>> policies["decoder/.*"] = "bfloat16"
        >>> policies["encoder/dense"].name, policies["decoder/out"].name, policies["other"].name
        ('int8_from_float32', 'bfloat16', 'float32')
    """

    def __init__(self, default_policy: Any = None, policy_map: dict | None = None) -> None:
        if isinstance(default_policy, DTypePolicyMap):
            raise ValueError("DTypePolicyMap: default_policy cannot be a DTypePolicyMap")
        if policy_map is not None and not isinstance(policy_map, dict):
            raise TypeError(f"DTypePolicyMap: policy_map must be a dict, received {type(policy_map).__name__}")
        self._default_policy_arg = default_policy
        self._default = get(default_policy, "DTypePolicyMap: default_policy")
        self._policy_map: dict[str, DTypePolicy] = {}
        for key, policy in (policy_map or {}).items():
            self[key] = policy
        self._name = f"map_{self._default.name}"
        self._compute, self._variable = self._default.compute_dtype, self._default.variable_dtype

    @property
    def default_policy(self) -> DTypePolicy:
        """The policy of paths no key matches."""
        return self._default

    @property
    def quantization_mode(self) -> str | None:
        return self._default.quantization_mode

    def __getitem__(self, key: str) -> DTypePolicy:
        if key in self._policy_map:
            return self._policy_map[key]
        matching = [pattern for pattern in self._policy_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"DTypePolicyMap: path {key!r} matches several keys {matching}; each path may match "
                             f"one key at most")
        return self._policy_map[matching[0]] if matching else self._default

    def __setitem__(self, key: str, policy: Any) -> None:
        if key in self._policy_map:
            raise ValueError(f"DTypePolicyMap: {key!r} is already mapped to {self._policy_map[key]!r}")
        self._policy_map[key] = get(policy, f"DTypePolicyMap[{key!r}]")

    def __delitem__(self, key: str) -> None:
        del self._policy_map[key]

    def __contains__(self, key: object) -> bool:
        return key in self._policy_map

    def __len__(self) -> int:
        return len(self._policy_map)

    def __iter__(self) -> Iterator[str]:
        return iter(self._policy_map)

    def keys(self) -> Any:
        """The keys (paths or regular expressions)."""
        return self._policy_map.keys()

    def items(self) -> Any:
        """``(key, policy)`` pairs."""
        return self._policy_map.items()

    def get_config(self) -> dict:
        """Keras's config: ``{"default_policy", "policy_map": {key: serialized policy}}``."""
        return {"default_policy": self._default_policy_arg,
                "policy_map": {key: serialize(policy) for key, policy in self._policy_map.items()}}

    @classmethod
    def from_config(cls, config: dict) -> DTypePolicyMap:
        """Inverse of :meth:`get_config` (policies as names or serialized dicts)."""
        config = dict(config)
        return cls(config.get("default_policy"), dict(config.get("policy_map") or {}))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DTypePolicyMap) and other._default == self._default
                and other._policy_map == self._policy_map)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        mapping = [(key, policy.name) for key, policy in self._policy_map.items()]
        return f"<DTypePolicyMap default_policy={self._default.name}, mapping={mapping}>"


def serialize(policy: DTypePolicy) -> dict:
    """Keras's serialized form ``{"module", "class_name": "DTypePolicy", "config": {"name"}, ...}``.

    Example:
        >>> from ember import dtype_policies
        >>> dtype_policies.serialize(dtype_policies.DTypePolicy("mixed_float16"))["config"]
        {'name': 'mixed_float16'}
    """
    if not isinstance(policy, DTypePolicy):
        raise TypeError(f"dtype_policies.serialize: expected a DTypePolicy, received {policy!r}")
    class_name = type(policy).__name__ if isinstance(policy, (QuantizedDTypePolicy, DTypePolicyMap)) else "DTypePolicy"
    return {"module": "keras", "class_name": class_name, "config": policy.get_config(), "registered_name": None}


def deserialize(config: dict) -> DTypePolicy:
    """Inverse of :func:`serialize` (a bare name is accepted too)."""
    return get(config, "dtype_policies.deserialize: config")
