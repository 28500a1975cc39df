"""Where :func:`pangeo_hpc.storage.stage.stage` copies from: an S3 prefix or a local folder.

Each source lists its files (:class:`Entry`: size, and the ETag of an object) and reads
byte ranges of them. S3 goes through obstore with :class:`~pangeo_hpc.s3.options.S3Options`
(endpoint, credentials and profile, retries with backoff), as ``inventory``, ``survey`` and
``open_era5`` do; each ranged GET carries the listed ETag as ``If-Match``, so ranges of an
object replaced while it is staged are refused by S3 instead of mixed into one file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, is_s3, split_url

if TYPE_CHECKING:
    from obstore.store import S3Store


class Entry(NamedTuple):
    """A file to stage.

    Attributes
    ----------
    name : str
        The source as the report and the stage's log name it: ``s3://bucket/key`` or a path.
    rel : str
        Its path below the destination folder.
    size : int
        Bytes, as listed.
    etag : str or None
        The object's ETag as listed (quoted); ``None`` for a file of a folder.

    Examples
    --------
    >>> Entry(name="s3://era5-pds/2019/01/sst.nc", rel="2019/01/sst.nc", size=1024,
    ...       etag='"9b2cf535f27731c974343645a3985328"').rel
    '2019/01/sst.nc'
    """

    name: str
    rel: str
    size: int
    etag: str | None


class SourceError(Exception):
    """A failure of the source a user must fix (credentials, endpoint, throttling), which
    would fail every file alike: it stops the stage. ``error`` is the explained one.

    Parameters
    ----------
    error : InputError
        The explained error.

    Examples
    --------
    >>> from pangeo_hpc.errors import InputError
    >>> err = SourceError(InputError("s3://era5-pds refused the credentials: pass --anon"))
    >>> print(err.error)
    s3://era5-pds refused the credentials: pass --anon
    """

    def __init__(self, error: InputError) -> None:
        super().__init__(str(error))
        self.error = error


class Source(Protocol):
    """What :func:`~pangeo_hpc.storage.stage.stage` needs of a source.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("staged_a").mkdir(); _ = Path("staged_a/a.nc").write_bytes(b"CDF1")
    >>> src: Source = source("staged_a", None)  # a Folder; a Bucket for s3://
    >>> [entry.rel for entry in src.entries()]
    ['a.nc']
    """

    #: a local folder (no ETags)
    folder: bool

    def entries(self) -> list[Entry]:
        """Every file or object of the source, with its size (and ETag).

        Returns
        -------
        list[Entry]
            The entries.

        Examples
        --------
        >>> from pathlib import Path
        >>> Path("staged_b").mkdir(); _ = Path("staged_b/a.nc").write_bytes(b"CDF1")
        >>> [(entry.rel, entry.size) for entry in source("staged_b", None).entries()]
        [('a.nc', 4)]
        """

    def read(self, entry: Entry, start: int, end: int) -> bytes | memoryview:
        """The bytes ``start:end`` of ``entry``.

        Parameters
        ----------
        entry : Entry
            A file or object :meth:`entries` listed.
        start : int
            First byte.
        end : int
            Byte after the last.

        Returns
        -------
        bytes | memoryview
            The bytes.

        Examples
        --------
        >>> from pathlib import Path
        >>> Path("staged_c").mkdir(); _ = Path("staged_c/a.nc").write_bytes(b"CDF1")
        >>> src = source("staged_c", None)
        >>> bytes(src.read(src.entries()[0], 0, 3))
        b'CDF'
        """


def _missing(src: str) -> InputError:
    return InputError(f"source {src!r} does not exist: check the bucket and prefix")


class Folder:
    """The files below a local folder (or one file).

    Parameters
    ----------
    src : str
        A folder or a file.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("staged_d").mkdir(); _ = Path("staged_d/a.nc").write_bytes(b"CDF1")
    >>> Folder("staged_d").entries()
    [Entry(name='staged_d/a.nc', rel='a.nc', size=4, etag=None)]
    """

    folder = True

    def __init__(self, src: str) -> None:
        self.src = src
        self.root = Path(src)
        if not self.root.exists():
            raise _missing(src)

    def entries(self) -> list[Entry]:
        """Every file below the folder (or the file), with its size.

        Returns
        -------
        list[Entry]
            The entries.

        Examples
        --------
        >>> from pathlib import Path
        >>> Path("staged_e").mkdir(); _ = Path("staged_e/a.nc").write_bytes(b"CDF1")
        >>> Folder("staged_e").entries()
        [Entry(name='staged_e/a.nc', rel='a.nc', size=4, etag=None)]
        """
        if self.root.is_file():
            return [Entry(str(self.root), self.root.name, self.root.stat().st_size, None)]
        found = []
        for folder, _dirs, files in os.walk(self.root):
            for f in files:
                path = Path(folder, f)
                rel = path.relative_to(self.root).as_posix()
                found.append(Entry(str(path), rel, path.stat().st_size, None))
        return sorted(found)

    def read(self, entry: Entry, start: int, end: int) -> bytes:
        """The bytes ``start:end`` of the file ``entry`` (fewer if it is shorter than listed).

        Parameters
        ----------
        entry : Entry
            A file or object :meth:`entries` listed.
        start : int
            First byte.
        end : int
            Byte after the last.

        Returns
        -------
        bytes
            The bytes.

        Examples
        --------
        >>> from pathlib import Path
        >>> Path("staged_f").mkdir(); _ = Path("staged_f/a.nc").write_bytes(b"CDF1")
        >>> folder = Folder("staged_f")
        >>> folder.read(folder.entries()[0], 0, 3)
        b'CDF'
        """
        parts = []
        fd = os.open(entry.name, os.O_RDONLY)
        try:
            while start < end:
                chunk = os.pread(fd, end - start, start)
                if not chunk:  # shorter than listed: the caller says so
                    break
                parts.append(chunk)
                start += len(chunk)
        finally:
            os.close(fd)
        return parts[0] if len(parts) == 1 else b"".join(parts)


class Bucket:
    """The objects below ``s3://bucket/prefix`` (or one object).

    Parameters
    ----------
    src : str
        ``s3://bucket/prefix`` (or one object).
    opts : S3Options
        How to reach S3.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> bucket = Bucket("s3://era5-pds/2019/01", S3Options(anon=True))
    >>> entries = bucket.entries()  # doctest: +SKIP
    """

    folder = False

    def __init__(self, src: str, opts: S3Options) -> None:
        self.src = src
        self.opts = opts
        self.bucket, self.prefix = split_url(src)

    @property
    def store(self) -> S3Store:
        return self.opts.store(self.bucket)

    def entries(self) -> list[Entry]:
        """Every object below the prefix (or the object), with its size and ETag.

        Returns
        -------
        list[Entry]
            The entries.

        Raises
        ------
        SourceError
            When the listing fails in a way a user must fix.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> bucket = Bucket("s3://era5-pds/2019/01", S3Options(anon=True))
        >>> entries = bucket.entries()  # doctest: +SKIP
        >>> entries[0].name  # 's3://era5-pds/2019/01/...'  # doctest: +SKIP
        """
        import obstore
        from obstore.exceptions import NotFoundError

        from pangeo_hpc.s3.listing import list_objects

        objects = list_objects(self.src, self.opts)  # explained errors: bucket, endpoint, ...
        keys = {o.key for o in objects}
        # a "folder" placeholder (key ending in /, listed without it) above other keys
        parents = {k[:i] for k in keys for i, c in enumerate(k) if c == "/"}
        base = self.prefix + "/" if self.prefix else ""
        found = [
            Entry(f"s3://{self.bucket}/{o.key}", o.key.removeprefix(base), o.size, o.etag)
            for o in objects
            if not (o.size == 0 and o.key in parents)
        ]
        if found or not self.prefix:
            return found
        try:  # not a prefix: one object?
            meta = obstore.head(self.store, self.prefix)
        except (FileNotFoundError, NotFoundError):
            raise _missing(self.src) from None
        except Exception as exc:
            err = explain(exc, self.src, self.opts)
            if err is None:
                raise
            raise err from exc
        name = self.prefix.rsplit("/", 1)[-1]
        url = f"s3://{self.bucket}/{self.prefix}"
        return [Entry(url, name, int(meta["size"]), meta["e_tag"])]

    def read(self, entry: Entry, start: int, end: int) -> memoryview:
        """The bytes ``start:end`` of the object ``entry``, of the ETag listed.

        Parameters
        ----------
        entry : Entry
            A file or object :meth:`entries` listed.
        start : int
            First byte.
        end : int
            Byte after the last.

        Returns
        -------
        memoryview
            The bytes.

        Raises
        ------
        SourceError
            When S3 fails in a way a user must fix.
        OSError
            When the object changed or went away since it was listed.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> bucket = Bucket("s3://era5-pds/2019/01", S3Options(anon=True))
        >>> entry = bucket.entries()[0]  # doctest: +SKIP
        >>> bytes(bucket.read(entry, 0, 4))  # the object's first 4 bytes  # doctest: +SKIP
        """
        import obstore
        from obstore.exceptions import BaseError, NotFoundError, PreconditionError

        key = entry.name.removeprefix(f"s3://{self.bucket}/")
        options: dict = {"range": (start, end)}
        if entry.etag:
            options["if_match"] = entry.etag
        try:
            return memoryview(obstore.get(self.store, key, options=options).bytes())
        except PreconditionError:
            raise OSError(
                f"changed while it was staged (its ETag is no longer {entry.etag}): stage again"
            ) from None
        except (FileNotFoundError, NotFoundError):
            raise OSError("vanished while it was staged") from None
        except BaseError as exc:
            err = explain(exc, entry.name, self.opts)
            if err is not None:  # refused credentials, no endpoint, throttling: stop
                raise SourceError(err) from exc
            raise OSError(f"{type(exc).__name__}: {exc}") from exc


def source(src: str, s3: S3Options | None) -> Source:
    """The source of ``src``: :class:`Bucket` for ``s3://``, else :class:`Folder`.

    Parameters
    ----------
    src : str
        A folder, a file, or an ``s3://`` URL.
    s3 : S3Options | None
        How to reach S3 (``None``: from config; with a folder: nothing).

    Returns
    -------
    Source
        The source.

    Raises
    ------
    InputError
        For another URL scheme, S3 options with a folder, or a source that does not exist.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("staged_g").mkdir()
    >>> type(source("staged_g", None)).__name__
    'Folder'
    >>> source("ftp://host/era5", None)
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: source 'ftp://host/era5' is not s3://BUCKET[/PREFIX] or a ...
    """
    if is_s3(src):
        return Bucket(src, s3 if s3 is not None else S3Options.resolve())
    if "://" in src:
        raise InputError(
            f"source {src!r} is not s3://BUCKET[/PREFIX] or a local folder: "
            "stage copies from one of these"
        )
    if s3 is not None:
        raise InputError(f"s3={s3!r} is for s3:// sources, and {src!r} is a folder: leave it out")
    return Folder(src)


__all__ = ["Bucket", "Entry", "Folder", "Source", "SourceError", "source"]
