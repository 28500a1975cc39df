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
