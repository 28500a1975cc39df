"""The index keys of the lazy readers: full keys and bounding boxes, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pangeo_hpc.io.indexing import bounding_box, full_key

A = np.arange(5 * 6 * 7).reshape(5, 6, 7)


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), slice(None), slice(None)),
        (1, slice(2, 5), -1),
        (slice(4, 0, -2), slice(None, None, 3), slice(5, 1, -1)),
        (slice(3, 3), 0, slice(None)),
        (-5, slice(-2, None), slice(None, None, -1)),
    ],
)
def test_box_then_post_index_is_numpy_indexing(key):
    box, post = bounding_box(key, A.shape)
    block = A[tuple(slice(lo, hi) for lo, hi in box)]
    np.testing.assert_array_equal(block[post], A[key])


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (2, (2, slice(None), slice(None))),
        ((Ellipsis, 1), (slice(None), slice(None), 1)),
        ((0, Ellipsis, 1), (0, slice(None), 1)),
        ((slice(1, 2),), (slice(1, 2), slice(None), slice(None))),
    ],
)
def test_full_key_has_one_entry_per_axis(key, expected):
    assert full_key(key, 3) == expected
    np.testing.assert_array_equal(A[full_key(key, 3)], A[key])


def test_full_key_refuses_new_axes():
    with pytest.raises(TypeError, match="do not add axes"):
        full_key((None, 0), 3)


def test_the_collector_is_off_while_any_translation_runs_and_on_after():
    # a collection on zarr's loop thread while a translator holds h5py's lock hung an
    # index build (h5py#2019): off from the first translation in to the last out, back on
    # after; a user who had it off keeps it off
    import gc
    import threading

    from pangeo_hpc.io.references import _no_collection

    inside = threading.Event()
    leave = threading.Event()

    def translate():
        with _no_collection():
            inside.set()
            leave.wait(10)

    assert gc.isenabled()
    other = threading.Thread(target=translate)
    other.start()
    inside.wait(10)
    with _no_collection():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other translation still runs
    leave.set()
    other.join(10)
    assert gc.isenabled()
    gc.disable()
    try:
        with _no_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
