"""Checking a copied file against its source: what can be proven, and how.

An S3 object's ETag is the MD5 of its bytes, as 32 hex digits, when it was uploaded in one
PUT (and, on AWS, not encrypted with SSE-KMS or SSE-C). An object uploaded in parts has
``MD5(MD5(part 1) ... MD5(part N))-N``, which depends on the part size the uploader chose and
cannot be recomputed from the bytes alone; other servers may use other ETags.

A copy is checked once it is complete, after its pages are written back and dropped from the
page cache (:func:`pangeo_hpc.storage.pagecache.drop`), so that it is re-read from the file
system, not from the memory it was just written into (mincore tells when the kernel kept the
pages anyway, e.g. on tmpfs; :attr:`Checked.from_memory`):

``size and MD5 = ETag`` (:data:`MD5_ETAG`)
    The copy has the object's size, and the MD5 of the copy as re-read is the object's
    ETag: the file holds the object's bytes, end to end (the GETs, the writes, the storage).
``size and re-read checksum`` (:data:`REREAD`)
    For objects without a plain-MD5 ETag and for files of a folder: the copy has the
    source's size, and each range as re-read has the checksum (BLAKE2b) of the same range
    as it was read from the source: the file holds what was read. That the reads returned
    the object's bytes rests on the byte counts, the ETag each ranged GET asked for
    (``If-Match``: the object did not change since it was listed) and TCP/TLS; a folder's
    files are read from the local file system.

This is the shape of NASA's ``mcp``/``msum`` (checksums of the bytes read, compared with
those of the bytes written as read back), with the object's own MD5 where S3 has one.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pangeo_hpc.storage.pagecache import drop, resident_bytes

#: how a copy was checked, as the report says it
MD5_ETAG = "size and MD5 = ETag"
REREAD = "size and re-read checksum"
#: why a copy was checked by re-reading, as the report says it
MULTIPART = "multipart ETag"
NOT_MD5 = "ETag is not an MD5"
FOLDER = "folder: no ETag"

_PLAIN_MD5 = re.compile(r"[0-9a-f]{32}")
#: bytes per read when a copy is re-read
BLOCK = 8 << 20


def _plain_md5(etag: str | None) -> str | None:
    """The MD5 in an ETag that is one (32 hex digits, quoted or not), else ``None``.

    >>> _plain_md5('"9b2cf535f27731c974343645a3985328"')
    '9b2cf535f27731c974343645a3985328'
    >>> _plain_md5('"d41d8cd98f00b204e9800998ecf8427e-3"') is None  # multipart
    True
    """
    if etag is None:
        return None
    text = etag.strip().removeprefix("W/").strip('"').lower()
    return text if _PLAIN_MD5.fullmatch(text) else None


def _how_checked(etag: str | None, *, folder: bool) -> str:
    """What a copy of a source with this ETag is checked by, as a report line says it.

    >>> _how_checked('"d41d8cd98f00b204e9800998ecf8427e"', folder=False)
    'size and MD5 = ETag'
    >>> _how_checked('"d41d8cd98f00b204e9800998ecf8427e-3"', folder=False)
    'size and re-read checksum (multipart ETag)'
    """
    if folder:
        return f"{REREAD} ({FOLDER})"
    if _plain_md5(etag) is not None:
        return MD5_ETAG
    multipart = etag is not None and re.fullmatch(r"[0-9a-f]{32}-\d+", etag.strip('"').lower())
    return f"{REREAD} ({MULTIPART if multipart else NOT_MD5})"


def digest(data: bytes | memoryview) -> bytes:
    """The checksum of one range's bytes (BLAKE2b, 128 bits).

    Parameters
    ----------
    data : bytes | memoryview
        The bytes.

    Returns
    -------
    bytes
        16 bytes.

    Examples
    --------
    >>> digest(b"abc").hex()
    'cf4ab791c62b8d2b2109c90275287816'
    """
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Checked:
    """How a copy was checked.

    Attributes
    ----------
    how : str
        :func:`_how_checked`'s text, e.g. ``"size and MD5 = ETag"``.
    from_memory : bool
        The kernel kept the copy's pages after the drop (tmpfs, or a file system that
        ignores ``POSIX_FADV_DONTNEED``): it was re-read from memory.

    Examples
    --------
    >>> Checked(how="size and MD5 = ETag", from_memory=False).how
    'size and MD5 = ETag'
    """

    how: str
    from_memory: bool


def _chunks(fd: int, start: int, end: int) -> Iterator[bytes]:
    """Bytes ``start..end`` of ``fd``, re-read in blocks."""
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(BLOCK, end - pos), pos)
        if not chunk:
            raise OSError(f"the copy ends at byte {pos}, before {end}")
        yield chunk
        pos += len(chunk)


def _md5_back(fd: int, ranges: Sequence[tuple[int, int]]) -> str:
    """The MD5 (hex) of the ranges of ``fd``, re-read in order."""
    whole = hashlib.md5(usedforsecurity=False)
    for start, end in ranges:
        for chunk in _chunks(fd, start, end):
            whole.update(chunk)
    return whole.hexdigest()


def _digests_back(fd: int, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    """The :func:`digest` of each range of ``fd``, re-read."""
    out = []
    for start, end in ranges:
        one = hashlib.blake2b(digest_size=16)
        for chunk in _chunks(fd, start, end):
            one.update(chunk)
        out.append(one.digest())
    return out


def _first_difference(
    ranges: Sequence[tuple[int, int]], read: Sequence[bytes], again: Sequence[bytes]
) -> tuple[int, int] | None:
    for (start, end), a, b in zip(ranges, read, again, strict=True):
        if a != b:
            return start, end
    return None


def verify(
    path: str | Path,
    *,
    size: int,
    etag: str | None,
    ranges: Sequence[tuple[int, int]],
    read: Sequence[bytes],
    folder: bool = False,
) -> Checked:
    """Check a complete copy against its source; raise ``OSError`` saying what differs.

    Parameters
    ----------
    path : path
        The copy (complete, not yet renamed into place).
    size : int
        The source's size, as listed.
    etag : str or None
        The source object's ETag, as listed; ``None`` for a file of a folder.
    ranges : sequence of (start, end)
        The byte ranges the copy was made of, in order, covering ``0..size``.
    read : sequence of bytes
        :func:`digest` of each range as it was read from the source.
    folder : bool
        The source is a file of a local folder.

    Returns
    -------
    Checked
        What was checked (module docstring).

    Raises
    ------
    OSError
        If the size, the MD5 (against the ETag) or a range's checksum differs.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("copy.nc").write_bytes(b"y" * 100)
    >>> checked = verify("copy.nc", size=100, etag=None, ranges=[(0, 100)],
    ...                  read=[digest(b"y" * 100)], folder=True)
    >>> checked.how
    'size and re-read checksum (folder: no ETag)'
    >>> verify("copy.nc", size=100, etag=None, ranges=[(0, 100)], read=[digest(b"z" * 100)],
    ...        folder=True)
    Traceback (most recent call last):
    ...
    OSError: ...
    """
    how = _how_checked(etag, folder=folder)
    fd = os.open(path, os.O_RDONLY)
    try:
        on_disk = os.fstat(fd).st_size
        if on_disk != size:
            raise OSError(f"the copy has {on_disk} bytes, the source {size}")
        drop(fd)
        from_memory = bool(resident_bytes(fd))
        want = None if folder else _plain_md5(etag)
        if want is None:
            differs = _first_difference(ranges, read, _digests_back(fd, ranges))
            if differs is not None:
                raise OSError(
                    f"bytes {differs[0]}..{differs[1]} of the copy, re-read, differ from those read"
                )
            return Checked(how, from_memory)
        md5 = _md5_back(fd, ranges)
        if md5 == want:
            return Checked(how, from_memory)
        # which went wrong: the copy (a range differs from what was read), or the read
        differs = _first_difference(ranges, read, _digests_back(fd, ranges))
    finally:
        os.close(fd)
    if differs is not None:
        where = f"bytes {differs[0]}..{differs[1]} differ from those read"
        raise OSError(f"MD5 of the copy {md5} is not the ETag {want}: its {where}")
    raise OSError(
        f"MD5 of the copy {md5} is not the ETag {want}, though the copy is what was "
        "read: the bytes changed on the way, or the ETag is not the object's MD5 "
        "(SSE-KMS or SSE-C encryption on AWS)"
    )


__all__ = ["MD5_ETAG", "REREAD", "Checked", "digest", "verify"]
