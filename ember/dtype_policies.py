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
        return isinstance(other, DTypePolicy) and other._name == self._name

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


def serialize(policy: DTypePolicy) -> dict:
    """Keras's serialized form ``{"module", "class_name": "DTypePolicy", "config": {"name"}, ...}``.

    Example:
        >>> from ember import dtype_policies
        >>> dtype_policies.serialize(dtype_policies.DTypePolicy("mixed_float16"))["config"]
        {'name': 'mixed_float16'}
    """
    if not isinstance(policy, DTypePolicy):
        raise TypeError(f"dtype_policies.serialize: expected a DTypePolicy, received {policy!r}")
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(), "registered_name": None}


def deserialize(config: dict) -> DTypePolicy:
    """Inverse of :func:`serialize` (a bare name is accepted too)."""
    return get(config, "dtype_policies.deserialize: config")
