"""The sample axis of a symbolic fit over a device mesh: placed, kept sharded, read back.

A fit with ``mesh`` set runs inside :func:`sample_mesh` (JAX's ``jax.set_mesh``), and
its kernels pin the last axis of their ``[..., N]`` intermediates to all the mesh's axes
with :func:`constrain_samples`: the semantics ``[capacity, N]``, node equations and
forbidden sets, the candidate terms the searches and the constant solver sum over the
samples. XLA's sharding propagation alone keeps most of them split, but not all: it
gathered the terms of the constant solver's scoring (``[candidates, N]``, every device
then computing all of them) next to the sorted candidate list. With the constraints each
device holds and computes its own samples and the sums over samples are all-reduces.
Without a mesh (``jax.set_mesh(None)``: the context of every fit with ``mesh=None``)
:func:`constrain_samples` returns its argument, so the programs of a one-device fit are
unchanged. JAX keys its traces on the context mesh, so a kernel traced for one context is
never reused in the other.

Arrays of one value per sample that must be ordered globally (the constant solver's
candidate zeros, poles and their sort) are gathered by XLA: a sort over a sharded axis
has no partitioned form; that is ``O(N)`` per solved row, not ``O(capacity N)``.

Several processes (``jax.distributed``): a mesh whose devices are not all addressable by
this process. :func:`place` then builds each global array from the full host copy every
process holds (``jax.make_array_from_callback``, each process filling only its own
devices' shards), and :func:`to_host` reads a sharded array back with
``multihost_utils.process_allgather`` (a collective: every process calls it at the same
point of the fit, which holds because every process runs the same deterministic fit).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax
import numpy as np

__all__ = [
    "sample_mesh",
    "constrain_samples",
    "sample_devices",
    "sample_chunk",
    "place",
    "to_host",
    "device_get",
    "spans_processes",
    "auto_mesh",
]


def auto_mesh(mesh):
    """``mesh`` with every axis of type ``Auto`` (XLA's propagation; a user's mesh of
    ``Explicit`` axes would make every ``jnp`` operation over a sharded axis an error
    without an ``out_sharding``); ``None`` stays ``None``."""
    if mesh is None:
        return None
    from jax.sharding import AxisType, Mesh

    types = getattr(mesh, "axis_types", None)
    if types is not None and all(t == AxisType.Auto for t in types):
        return mesh
    return Mesh(mesh.devices, mesh.axis_names, axis_types=(AxisType.Auto,) * len(mesh.axis_names))


@contextlib.contextmanager
def sample_mesh(mesh) -> Iterator[None]:
    """The context of a fit's device work: ``jax.set_mesh(mesh)``; ``mesh=None`` sets no
    mesh (a one-device fit inside a user's own ``jax.set_mesh`` is not sharded by it).
    Thread-local, as JAX's mesh context: enter it in the thread that runs the fit."""
    with jax.set_mesh(mesh):
        yield


def _sample_axes():
    """The axis names the sample axis is split over (all the context mesh's), or
    ``None`` outside a mesh; read while tracing."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return None
    return tuple(mesh.axis_names)


def constrain_samples(x, axis: int = -1):
    """``x`` with its sample axis ``axis`` split over all the axes of the context mesh
    and every other axis replicated (``jax.lax.with_sharding_constraint``); ``x`` itself
    without a mesh. For use inside the jitted kernels, on arrays of a sample axis of
    length ``N`` (a multiple of the number of devices: the estimator pads to one)."""
    axes = _sample_axes()
    if axes is None:
        return x
    from jax.sharding import PartitionSpec as P

    spec = [None] * x.ndim
    spec[axis] = axes
    return jax.lax.with_sharding_constraint(x, P(*spec))


def spans_processes(mesh) -> bool:
    """Whether some device of ``mesh`` belongs to another process (``jax.distributed``)."""
    if mesh is None:
        return False
    me = jax.process_index()
    return any(d.process_index != me for d in mesh.devices.flat)


def place(a: np.ndarray, mesh, spec) -> jax.Array:
    """The host array ``a`` (the full array, the same in every process) as a global array
    of ``NamedSharding(mesh, spec)``: ``jax.device_put`` when this process addresses every
    device of the mesh, else ``jax.make_array_from_callback`` (this process fills only
    its own devices' shards; ``jax.device_put`` would first check that the array is the
    same in every process, an all-gather of the whole array)."""
    from jax.sharding import NamedSharding

    sharding = NamedSharding(mesh, spec)
    if not spans_processes(mesh):
        return jax.device_put(a, sharding)
    return jax.make_array_from_callback(a.shape, sharding, lambda idx: a[idx], dtype=a.dtype)


def to_host(x) -> np.ndarray:
    """A device array as a numpy array: ``np.asarray`` where this process holds all of it
    (one device, a mesh of local devices, or replicated), else the shards of every
    process gathered (``multihost_utils.process_allgather``, a collective)."""
    if not isinstance(x, jax.Array) or x.is_fully_addressable or x.is_fully_replicated:
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def sample_devices() -> int:
    """The number of devices the sample axis is split over in the context mesh (1
    without a mesh); read while tracing."""
    axes = _sample_axes()
    if axes is None:
        return 1
    return int(np.prod([jax.sharding.get_abstract_mesh().shape[a] for a in axes]))


def sample_chunk(z, i, n_chunks: int, axis: int = -1):
    """Chunk ``i`` (traced int) of ``n_chunks`` (static) of the sample axis ``axis`` of
    ``z``: without a mesh the contiguous samples ``[i Nc, (i + 1) Nc)``; over ``D``
    devices the ``i``-th contiguous part of every device's own samples (a reshape of the
    axis into ``(D, n_chunks, ...)`` and an index on the middle axis), so no device
    fetches another's samples (a dynamic slice of a split axis gathers it whole). The
    same samples in all, in another grouping. Needs ``N`` divisible by ``D * n_chunks``
    when sharded (else the contiguous chunk)."""
    from jax import lax

    axis = axis % z.ndim
    n = z.shape[axis]
    nc = n // n_chunks
    D = sample_devices()
    if D == 1 or n_chunks == 1 or n % (D * n_chunks):
        return lax.dynamic_slice_in_dim(z, i * nc, nc, axis=axis)
    shape = z.shape[:axis] + (D, n_chunks, nc // D) + z.shape[axis + 1 :]
    part = lax.dynamic_index_in_dim(z.reshape(shape), i, axis=axis + 1, keepdims=False)
    return constrain_samples(part.reshape(z.shape[:axis] + (nc,) + z.shape[axis + 1 :]), axis=axis)


def device_get(tree):
    """``jax.device_get(tree)``, the arrays that span other processes gathered by
    :func:`to_host`."""
    leaves = jax.tree.leaves(tree)
    if all(
        not isinstance(x, jax.Array) or x.is_fully_addressable or x.is_fully_replicated
        for x in leaves
    ):
        return jax.device_get(tree)
    return jax.tree.map(to_host, tree)
