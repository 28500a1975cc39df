"""Cache entries sealed with a digest of their whole content, checked before any parsing.

A cache entry that a crash, a bad disk or a user damaged must be a miss, never a value:
NumPy's ``.npy`` header, a zip directory and JSON all parse many damaged byte strings
without complaint (a flipped bit of a ``.npy`` header's length gave a map of garbage with
exit 0; issue 28), and a zip member's CRC is not checked when a loader stops early. So
each entry is written as one byte string: a fixed head naming its kind, the hex SHA-256
of the payload, a separator, the payload. A reader checks the head and the digest of
every byte that follows before anything parses them (:func:`_unseal`); a mismatch, a
truncation or an entry of an earlier format without a seal is :class:`Damaged`.

JSON entries (the scan cache, byte-range indexes) stay JSON that other tools read
(:func:`seal_json`): the digest is the first member of the object,
``{"pangeo-hpc-sha256":"<hex>",...}``, and covers the bytes after it.

Written once into a temporary file and renamed (:func:`pangeo_hpc.write.outputs.atomic_file`),
so the seal and what it seals appear together.

Two digests (:data:`DIGESTS`): SHA-256 for the JSON entries, small and read by other
tools, and XXH3-128 for the state cache's binary entries, large and read on an update's
critical path: SHA-256 took 0.1-0.2 s for a 63 MB roll-up here (0.3-0.8 GB/s), XXH3 a tenth
of that. Neither is keyed: a seal finds damage (a crash, a bad disk, a bit flipped, a
truncation), not a forger, who could write a new seal of either kind; XXH3-128's 128
bits make a damaged entry that still matches its seal as unlikely as SHA-256's do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "DIGESTS", "JSON_HEAD", "Damaged", "payload_offset", "seal", "seal_head", "seal_json",
    "sealed_json", "unseal_json",
]  # fmt: skip


def _sha256(payload: bytes | memoryview) -> str:
    return hashlib.sha256(payload).hexdigest()


def _xxh3_128(payload: bytes | memoryview) -> str:
    import xxhash

    return xxhash.xxh3_128_hexdigest(payload)


#: the digests a seal may hold: name -> (hex digest of a payload, its length in hex digits)
DIGESTS: dict[str, tuple[Callable[[bytes | memoryview], str], int]] = {
    "sha256": (_sha256, 64),
    "xxh3-128": (_xxh3_128, 32),
}

#: the head of a sealed JSON entry: it stays a JSON object
JSON_HEAD = b'{"pangeo-hpc-sha256":"'
_JSON_SEP = b'",'
_DIGITS = frozenset(b"0123456789abcdef")


class Damaged(ValueError):
    """A sealed entry whose head, length or digest is not what was written.

    Examples
    --------
    >>> blob = seal_json({"n": 1})
    >>> unseal_json(blob[:-1] + b"x")
    Traceback (most recent call last):
    ...
    pangeo_hpc.write.sealed.Damaged: its sha256 digest does not match its 6 bytes
    """


def seal(
    payload: bytes | memoryview, head: bytes, sep: bytes = b"\n", *, digest: str = "sha256"
) -> bytes:
    """``head``, the hex ``digest`` (:data:`DIGESTS`) of ``payload``, ``sep`` and
    ``payload``, as one byte string.

    Parameters
    ----------
    payload : bytes or memoryview
        The bytes to seal.
    head : bytes
        A fixed head naming the kind of entry.
    sep : bytes, optional
        The separator after the digest.
    digest : str, optional
        A name of :data:`DIGESTS`.

    Returns
    -------
    bytes
        The sealed bytes.

    Examples
    --------
    >>> blob = seal(b"abc", b"kind sha256 ")
    >>> blob[:20], len(blob)
    (b'kind sha256 ba7816bf', 80)
    >>> _unseal(blob, b"kind sha256 ")
    b'abc'
    """
    return seal_head(payload, head, sep, digest=digest) + payload


def seal_head(
    payload: bytes | memoryview, head: bytes, sep: bytes = b"\n", *, digest: str = "sha256"
) -> bytes:
    """What :func:`seal` puts before ``payload``: a writer writes it, then ``payload``
    (no copy of a large payload).

    Parameters
    ----------
    payload : bytes or memoryview
        The bytes to seal.
    head : bytes
        A fixed head naming the kind of entry.
    sep : bytes, optional
        The separator after the digest.
    digest : str, optional
        A name of :data:`DIGESTS`.

    Returns
    -------
    bytes
        The head, digest and separator.

    Examples
    --------
    >>> seal_head(b"abc", b"kind sha256 ")[:20]  # then the digest's 64 hex digits
    b'kind sha256 ba7816bf'
    >>> seal_head(b"abc", b"kind sha256 ") + b"abc" == seal(b"abc", b"kind sha256 ")
    True
    """
    return b"".join((head, DIGESTS[digest][0](payload).encode(), sep))


def _unseal(data: bytes, head: bytes, sep: bytes = b"\n", *, digest: str = "sha256") -> bytes:
    """The payload of ``data`` sealed by :func:`seal` with ``head``, ``sep`` and ``digest``.

    Raises
    ------
    Damaged
        If ``data`` does not start with ``head``, is shorter than a seal, or its payload's
        digest is not the one written (one bit changed anywhere, a truncation).
    """
    return data[payload_offset(data, head, sep, digest=digest) :]


def payload_offset(
    data: bytes | bytearray | memoryview, head: bytes, sep: bytes = b"\n", *, digest: str = "sha256"
) -> int:
    """Where the payload of ``data`` starts, its seal checked as :func:`_unseal` does,
    without copying the payload (a roll-up of 20 years of 0.25-degree maps is 1 GB).

    Parameters
    ----------
    data : bytes, bytearray or memoryview
        Sealed bytes (a memoryview of bytes: format ``B``).
    head : bytes
        The head expected.
    sep : bytes, optional
        The separator expected.
    digest : str, optional
        The digest's name.

    Returns
    -------
    int
        The offset.

    Raises
    ------
    Damaged
        As :func:`_unseal`.

    Examples
    --------
    >>> blob = seal(b"abc", b"kind sha256 ")
    >>> blob[payload_offset(blob, b"kind sha256 ") :]
    b'abc'
    """
    hexdigest, hexlen = DIGESTS[digest]
    n = len(head)
    start = n + hexlen + len(sep)
    if len(data) < start or data[:n] != head:
        raise Damaged("it has no seal of this format (an earlier version, or damaged)")
    written = bytes(data[n : n + hexlen])
    if data[n + hexlen : start] != sep or not _DIGITS.issuperset(written):
        raise Damaged("its seal is damaged")
    payload = memoryview(data)[start:]
    if hexdigest(payload).encode() != written:
        raise Damaged(f"its {digest} digest does not match its {len(payload)} bytes")
    return start


def seal_json(doc: dict[str, Any]) -> bytes:
    """``doc`` as compact JSON whose first member is the SHA-256 of the rest.

    Parameters
    ----------
    doc : dict[str, Any]
        A JSON object.

    Returns
    -------
    bytes
        The sealed bytes.

    Examples
    --------
    >>> blob = seal_json({"format": "x", "n": 1})
    >>> blob.startswith(JSON_HEAD), json.loads(blob)["n"]
    (True, 1)
    >>> unseal_json(blob)
    {'format': 'x', 'n': 1}
    """
    if not doc:
        raise ValueError("an empty JSON object cannot be sealed: give it a format member")
    text = json.dumps(doc, separators=(",", ":")).encode()
    return seal(text[1:], JSON_HEAD, _JSON_SEP)  # "{" is the head's


def unseal_json(data: bytes) -> dict[str, Any]:
    """The object sealed by :func:`seal_json`, checked before it is parsed.

    Parameters
    ----------
    data : bytes
        Bytes of :func:`seal_json`.

    Returns
    -------
    dict[str, Any]
        The object.

    Raises
    ------
    Damaged
        As :func:`_unseal`, or if the checked bytes are not a JSON object.

    Examples
    --------
    >>> unseal_json(seal_json({"format": "x", "n": 1}))
    {'format': 'x', 'n': 1}
    """
    body = _unseal(data, JSON_HEAD, _JSON_SEP)
    try:
        doc = json.loads(b"{" + body)
    except ValueError as exc:  # RecursionError, UnicodeDecodeError: not from sealed bytes
        raise Damaged(f"its sealed bytes are not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise Damaged("its sealed bytes are not a JSON object")
    return doc


def sealed_json(data: bytes) -> bool:
    """Whether ``data`` begins as :func:`seal_json` writes, but for at most one damaged
    byte: an entry of ours, maybe damaged, which its writer may replace.

    Parameters
    ----------
    data : bytes
        Bytes.

    Returns
    -------
    bool
        Whether they look like :func:`seal_json`'s.

    Examples
    --------
    >>> blob = seal_json({"n": 1})
    >>> sealed_json(blob), sealed_json(blob[:-1] + b"x"), sealed_json(b'{"n": 1}')
    (True, True, False)
    """
    head = data[: len(JSON_HEAD)]
    if len(head) != len(JSON_HEAD):
        return False
    return sum(a != b for a, b in zip(head, JSON_HEAD, strict=True)) <= 1
