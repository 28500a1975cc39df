"""The cache of partial states: what a recipe run learned from each input file, kept.

A run that reduces over time (a mean, a climatology, a trend) computes, per input file (a
time slice), a *partial state* of its reduction: a few NumPy arrays (sums and counts,
per-month sums, ...). Kept here, a later run of the same chain over the same files reads
only the files that are new or changed and merges the states it finds.

* **Keys** (:mod:`~pangeo_hpc.batch.incremental.keys`): the files' identities and the
  chain's code; nothing is ever looked up by path.
* **Files.** One ``<key>.npz`` per entry (``np.savez``, never pickle: loaded with
  ``allow_pickle=False``; the entry's small JSON ``meta`` rides inside as bytes), sealed
  (:mod:`pangeo_hpc.write.sealed`: a head naming the format and the XXH3-128 digest of the
  npz bytes that follow, so not a bare ``.npz`` any more), in one
  flat per-user folder (``pangeo-hpc.cache.folder``; made ``0700`` with the package's
  marker by :func:`~pangeo_hpc.write.outputs.claim_tree`, entries ``0600``). A folder that
  another user owns or may write to is refused: a state planted there would become a
  result.
* **Writes** go through :func:`~pangeo_hpc.write.outputs.atomic_file`: a temporary name
  beside the entry, then one rename: a process killed at any point leaves the entry whole
  or absent. Not fsynced (a cache, written 240 times a run): a machine that crashes may
  leave a damaged entry, which a read detects (below). A full disk (``ENOSPC``, ``EDQUOT``) leaves
  nothing half-written and turns caching off for the rest of the run
  (:attr:`StateCache.disabled` says why; one :class:`CacheWarning`): the run goes on.
* **Reads.** The whole entry is read and its digest checked before a byte of it is
  parsed (NumPy and zip parse many damaged headers without complaint: a flipped bit of a
  ``.npy`` header gave garbage with exit 0, issue 28); its arrays are then views of the
  bytes read (:mod:`.entry_bytes`: no second checksum, no copy). A damaged entry (truncated by a
  crash, a flipped bit, random bytes, one of an earlier format), or any error at all
  while reading it, is one :class:`CacheWarning`, removed (if it is ours: its name, in a
  folder marked ``state-cache``), and a miss: the caller rebuilds it. Never a crash,
  never a value. (Entries of format 2, unsealed, have other keys: they are never looked
  up, ``cache list`` shows them as unreadable, and eviction or ``cache clear`` removes
  them.) One read is a hint instead: :meth:`StateCache.peek`, which files a roll-up
  holds, reads that member alone (its zip CRC-32 checked) for the plan; the roll-up's
  values are then loaded sealed, and its list compared with the hint.
An unwritable folder, eviction and sharing the folder between processes:
:mod:`.cache_folder`.
"""

from __future__ import annotations

import io
import json
import os
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from pangeo_hpc import config
from pangeo_hpc.batch.incremental.cache_folder import (
    FLAG,
    KIND,
    Entry,
    check_owner,
    default_folder,
    default_max_bytes,
    file_size,
    is_entry,
    only_ours,
    remove_stale_parts,
    scan,
    why_unwritable,
)
from pangeo_hpc.batch.incremental.entry_bytes import read_entry
from pangeo_hpc.batch.incremental.keys import FORMAT as _FORMAT
from pangeo_hpc.errors import InputError, StorageError
from pangeo_hpc.write.sealed import seal_head
from pangeo_hpc.write.writable import nearest_existing, read_only

__all__ = ["CacheWarning", "Entry", "StateCache", "open_cache"]

#: the member of an entry's npz holding its meta (JSON bytes) and key
_META = "__meta__"
#: what goes into every key besides stamps and chain: a new layout makes new keys
#: the digest sealing an entry (write.sealed.DIGESTS) and the head of its file before it
_DIGEST = "xxh3-128"
_HEAD = f"{_FORMAT} {_DIGEST} ".encode()


class CacheWarning(UserWarning):
    """The state cache ignored something (a damaged entry, a full disk); the run goes on.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> cache = StateCache("states-cachewarning")
    >>> _ = cache.put("a" * 64, {"sum": np.zeros(3)}, {})
    >>> _ = (cache.folder / f"{'a' * 64}.npz").write_bytes(b"damaged")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cache.get("a" * 64)  # a miss, and the run goes on
    >>> [w.category.__name__ for w in caught]
    ['CacheWarning']
    """


class StateCache:
    """The folder of partial states (see the module's description).

    Parameters
    ----------
    folder : path, optional
        Default ``pangeo-hpc.cache.folder`` (``~`` and ``$VARS`` expanded). Created on the
        first :meth:`put` (``0700``); when it exists it is checked now.
    max_bytes : int, optional
        Entries beyond this many bytes are evicted, least recently used first; default
        ``pangeo-hpc.cache.max-size`` (``10GB``).

    Raises
    ------
    InputError
        If the folder exists and is not owned by this user, may be written by its group or
        others, or holds files that pangeo-hpc did not write (nothing is changed).

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache
    >>> cache = StateCache("~/.cache/pangeo-hpc/states", max_bytes=10 * 2**30)  # doctest: +SKIP
    >>> [entry.key for entry in cache.entries()]  # doctest: +SKIP
    """

    __slots__ = ("_claimed", "_total", "disabled", "folder", "max_bytes")

    def __init__(self, folder: str | Path | None = None, max_bytes: int | None = None) -> None:
        given = default_folder() if folder is None else Path(os.path.expandvars(str(folder)))
        self.folder: Path = given.expanduser()
        self.max_bytes: int = default_max_bytes() if max_bytes is None else int(max_bytes)
        #: ``None``, or why writes stopped (a full disk, a read-only folder); then
        #: :meth:`put` stores nothing
        self.disabled: str | None = None
        self._claimed = False
        #: bytes of the entries as of the last scan plus those this instance stored since
        #: (other processes' entries count from the next scan): a put scans the folder only
        #: when this passes ``max_bytes``, not every time (240 puts a run)
        self._total: int | None = None
        self._check()

    # -- the folder -------------------------------------------------------------------

    def _check(self) -> bool:
        """Refuse a folder that is not this user's own; ``False`` if it does not exist."""
        return check_owner(self.folder)

    def _claim(self) -> None:
        """Create the folder (``0700``, marked) or check it, once per instance."""
        from pangeo_hpc.write.outputs import claim_tree

        if self._claimed:
            return
        for attempt in range(3):
            try:
                claim_tree(self.folder, kind=KIND, flag=FLAG, ours=only_ours, mode=0o700)
                break
            except FileNotFoundError:  # another process's temporary marker went away
                if attempt == 2:
                    raise
        self._check()  # it may have existed, made by someone else, between _check and here
        self._claimed = True

    # -- entries ----------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError(f"{key!r} is not an entry key (64 hex digits of entry_key)")
        return self.folder / f"{key}.npz"

    def get(self, key: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
        """The arrays and meta stored under ``key``, or ``None`` (a miss).

        The entry's digest is checked before it is parsed. A damaged entry, or any error
        while reading it, is a :class:`CacheWarning`, the entry removed, and a miss; an
        entry that another process evicts meanwhile is a miss. A hit becomes the most
        recently used.

        Parameters
        ----------
        key : str
            The entry's key.

        Returns
        -------
        (dict, dict) or None
            The arrays by name and the meta, or ``None``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-get")
        >>> _ = cache.put("a" * 64, {"sum": np.arange(3.0)}, {"count": 3})
        >>> arrays, meta = cache.get("a" * 64)
        >>> arrays["sum"], meta["count"], cache.get("b" * 64)
        (array([0., 1., 2.]), 3, None)
        """
        path = self._path(key)
        try:
            arrays, meta = _parse(read_entry(path, _HEAD, _DIGEST), key)
        except FileNotFoundError:
            return None
        except Exception as exc:  # whatever a damaged entry raises: a miss, never a crash
            self._damaged(path, exc)
            return None
        try:
            os.utime(path)  # last used: now (eviction keeps it)
        except OSError:
            pass  # evicted by another process meanwhile: the arrays read are still right
        return arrays, meta

    def has(self, key: str) -> bool:
        """Whether an entry is stored under ``key``: its file exists. Nothing is read and
        nothing is marked used (a damaged entry is found out by :meth:`get`).

        Parameters
        ----------
        key : str
            The entry's key.

        Returns
        -------
        bool
            Whether its file exists.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-has")
        >>> _ = cache.put("a" * 64, {"sum": np.zeros(3)}, {})
        >>> cache.has("a" * 64), cache.has("b" * 64)
        (True, False)
        """
        return self._path(key).is_file()

    def peek(self, key: str, name: str) -> np.ndarray | None:
        """The array ``name`` of the entry under ``key``, read alone, without marking the
        entry used; ``None`` for a miss, an entry without it or a damaged one (left for
        :meth:`get` to report and remove).

        A hint, read in a few milliseconds whatever the entry's size: only that member's
        bytes are read, checked by the zip's CRC-32, not the entry's seal (reading and
        hashing a 1 GB roll-up to learn which files it holds took as long as the update
        it spares). Whoever acts on it checks it again on the sealed entry
        (:func:`~pangeo_hpc.batch.incremental.rollups.load_rollup` compares the list of
        the roll-up it loads with the one peeked at, and falls back to each file's state).

        Parameters
        ----------
        key : str
            The entry's key.
        name : str
            The array's name.

        Returns
        -------
        ndarray or None
            The array, or ``None``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-peek")
        >>> _ = cache.put("a" * 64, {"sum": np.arange(3.0), "count": np.ones(3)}, {})
        >>> cache.peek("a" * 64, "sum"), cache.peek("a" * 64, "max")
        (array([0., 1., 2.]), None)
        """
        try:
            with self._path(key).open("rb") as f, zipfile.ZipFile(f) as npz:
                member = npz.read(f"{name}.npy")  # the whole member: its CRC-32 checked
            return np.lib.format.read_array(io.BytesIO(member), allow_pickle=False)
        except Exception:  # FileNotFoundError (a miss), a damaged entry, a missing member
            return None

    def _damaged(self, path: Path, exc: BaseException) -> None:
        from pangeo_hpc.write.outputs import remove_file

        why = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ValueError) and "allow_pickle" in str(exc):
            # NumPy's own text suggests loading it with pickle: never for a cache entry
            why = "it reads as pickled Python objects, which are never loaded"
        why = " ".join(why.split())[:200]  # one line, whatever the error's text
        warnings.warn(
            f"the cached state {str(path)!r} is damaged ({why}): it is ignored, removed and "
            "rebuilt from its files",
            CacheWarning,
            stacklevel=3,
        )
        try:
            remove_file(path, ours=is_entry, flag=FLAG)
        except (OSError, InputError):
            pass  # a miss either way; the next put replaces it

    def check_writable(self) -> bool:
        """Whether entries can be written: the folder, or the nearest folder above it that
        exists, is writable (``os.access``: a read-only file system, permissions). If not,
        caching is turned off for this instance (:attr:`disabled`, one
        :class:`CacheWarning`) and the run goes on; entries there are still read. Called
        before a run's cluster starts, so that the warning comes first.

        Returns
        -------
        bool
            Whether entries can be written.

        Examples
        --------
        >>> from pangeo_hpc.batch import StateCache
        >>> StateCache("states-check-writable").check_writable()
        True
        """
        if self.disabled is not None:
            return False
        where = nearest_existing(self.folder)
        if os.access(where, os.W_OK | os.X_OK):
            return True
        problem = "a read-only file system" if read_only(where) else "no write permission"
        self._disable(f"{self.folder} cannot be written ({problem} at {where})")
        return False

    def _disable(self, why: str) -> None:
        fix = "free space there" if why.startswith("no space") else "make it writable"
        self.disabled = f"{why}: this run is not cached ({fix}, or set {FLAG} elsewhere)"
        warnings.warn(f"state cache: {self.disabled}", CacheWarning, stacklevel=3)

    def put(self, key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bool:
        """Store ``arrays`` and ``meta`` under ``key``, whole or not at all.

        Parameters
        ----------
        key : str
            From :func:`entry_key`.
        arrays : dict of str to numpy.ndarray
            Numeric, boolean, string or datetime arrays (no object arrays: never pickled).
        meta : dict
            Small, JSON-able: recipe, result, files, ... (``meta["recipe"]`` is what
            ``clear(recipe=...)`` matches).

        Returns
        -------
        bool
            ``True`` when stored; ``False`` once caching is :attr:`disabled` (a full disk:
            one :class:`CacheWarning` says so the first time). Older entries are then
            evicted beyond ``max_bytes``; the one just stored stays even if it alone is
            larger (until the next put), so that a run reads back what it stored.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-put")
        >>> cache.put("a" * 64, {"sum": np.arange(3.0)}, {"recipe": "era5-sst-mean"})
        True
        >>> sorted(p.name[:8] for p in cache.folder.iterdir() if p.suffix == ".npz")
        ['aaaaaaaa']
        """
        from pangeo_hpc.write.outputs import atomic_file

        if self.disabled is not None:
            return False
        path = self._path(key)
        if _META in arrays:
            raise ValueError(f"{_META!r} is reserved in a cached state: name the array otherwise")
        members = {name: np.asarray(value) for name, value in arrays.items()}
        for name, value in members.items():
            if value.dtype.hasobject:
                raise ValueError(
                    f"the array {name!r} of a cached state holds Python objects: states hold "
                    "numbers, strings or times, never pickled objects"
                )
        blob = json.dumps({"key": key, "meta": meta}, separators=(",", ":"), default=str)
        members[_META] = np.frombuffer(blob.encode(), dtype=np.uint8)
        npz = io.BytesIO()
        np.savez(npz, allow_pickle=False, **members)
        try:
            self._claim()
            with atomic_file(path, flag=FLAG, mode=0o600, ours=is_entry) as tmp:
                with tmp.open("wb") as f:
                    f.write(seal_head(npz.getbuffer(), _HEAD, digest=_DIGEST))
                    f.write(npz.getbuffer())
        except (OSError, StorageError) as exc:
            why = why_unwritable(exc, self.folder)
            if why is None:
                raise
            self._disable(why)
            return False
        if self._total is None:
            self._total = sum(size for _, size, _ in scan(self.folder))
        else:
            self._total += file_size(path)
        if self._total > self.max_bytes:
            self._evict(keep=path.name)
        return True

    def entries(self) -> list[Entry]:
        """Every entry, most recently used first; one that cannot be read (damaged, of an
        earlier format) has empty ``meta`` and ``damaged`` saying why. Nothing is removed
        here (``cache list`` only looks).

        Returns
        -------
        list[Entry]
            The entries.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-entries")
        >>> _ = cache.put("a" * 64, {"sum": np.zeros(3)}, {"recipe": "era5-sst-mean", "piece": 0})
        >>> [(entry.key[:4], entry.meta["piece"]) for entry in cache.entries()]
        [('aaaa', 0)]
        """
        out = []
        for path, size, used in sorted(scan(self.folder), key=lambda t: t[2], reverse=True):
            meta, why = self._read_meta(path)
            out.append(Entry(path.name[:-4], path, size, used, meta, why))
        return out

    def size(self) -> int:
        """Bytes of all entries.

        Returns
        -------
        int
            The bytes.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-size")
        >>> size = cache.size()
        >>> _ = cache.put("a" * 64, {"sum": np.zeros(1000)}, {})
        >>> cache.size() - size > 8000  # the 8 kB of the array, and the entry's head
        True
        """
        return sum(size for _, size, _ in scan(self.folder))

    def clear(self, *, recipe: str | None = None) -> int:
        """Remove every entry, or those of ``recipe`` (their ``meta["recipe"]``).

        Parameters
        ----------
        recipe : str, optional
            A recipe's name; ``None``: every entry.

        Returns
        -------
        int
            How many entries this call removed.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-clear")
        >>> for key, recipe in [("a" * 64, "era5-sst-mean"), ("b" * 64, "era5-sst-trend")]:
        ...     _ = cache.put(key, {"sum": np.zeros(3)}, {"recipe": recipe})
        >>> cache.clear(recipe="era5-sst-mean"), [entry.meta["recipe"] for entry in cache.entries()]
        (1, ['era5-sst-trend'])
        """
        from pangeo_hpc.write.outputs import remove_file

        if not self._check():
            return 0
        removed = 0
        for path, _, _ in scan(self.folder):
            if recipe is not None and self._read_meta(path)[0].get("recipe") != recipe:
                continue
            removed += remove_file(path, ours=is_entry, flag=FLAG)
        return removed

    def _read_meta(self, path: Path) -> tuple[dict[str, Any], str | None]:
        """An entry's meta (its seal checked, only that member parsed) and ``None``, or
        ``{}`` and why it cannot be read."""
        try:
            doc = json.loads(read_entry(path, _HEAD, _DIGEST)[_META].tobytes().decode())
            meta = doc.get("meta")
            if not isinstance(meta, dict) or doc.get("key") != path.name[:-4]:
                raise ValueError("its key or meta is not this entry's")
        except FileNotFoundError:
            return {}, "removed meanwhile"
        except Exception as exc:  # damaged: shown as such, never a crash
            return {}, " ".join(f"{type(exc).__name__}: {exc}".split())[:120]
        return meta, None

    def evict(self) -> int:
        """Remove the least recently used entries until at most ``max_bytes`` remain.

        Returns
        -------
        int
            How many entries this call removed.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> cache = StateCache("states-evict", max_bytes=10**9)
        >>> _ = cache.put("a" * 64, {"sum": np.zeros(1000)}, {})
        >>> cache.max_bytes = 100  # smaller than the entry
        >>> cache.evict(), cache.size()
        (1, 0)
        """
        return self._evict(keep=None)

    def _evict(self, keep: str | None) -> int:
        """:meth:`evict`, sparing the entry named ``keep`` (the one just stored), and
        removing temporary files that killed writers left behind."""
        from pangeo_hpc.write.outputs import remove_file

        found = scan(self.folder)
        total = sum(size for _, size, _ in found)
        removed = 0
        self._total = total
        for path, size, _ in sorted(found, key=lambda t: (t[2], t[0].name)):
            if total <= self.max_bytes:
                break
            if path.name == keep:
                continue
            if remove_file(path, ours=is_entry, flag=FLAG):
                removed += 1
            total -= size  # gone either way (another process may have evicted it)
        self._total = total
        remove_stale_parts(self.folder)
        return removed


def open_cache(cache: StateCache | bool | None = None) -> StateCache | None:
    """The cache a run uses: ``cache`` itself, none for ``False``, else config's (none when
    ``pangeo-hpc.cache.enabled`` is false). Its folder is checked now: one another user can
    write to is refused (InputError), before any cluster starts.

    Parameters
    ----------
    cache : StateCache or bool, optional
        A cache, ``True`` or ``None`` (config's), or ``False`` (none).

    Returns
    -------
    StateCache or None
        The cache, or ``None``.

    Raises
    ------
    InputError
        If the cache's folder is another user's, or holds what this package did not
        write.

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.incremental.state_cache import open_cache
    >>> open_cache(False) is None, open_cache(StateCache("states-open")).folder.name
    (True, 'states-open')
    """
    if isinstance(cache, StateCache):
        return cache
    if cache is False or (cache is None and not config.get("cache.enabled")):
        return None
    return StateCache()


def _parse(arrays: dict[str, np.ndarray], key: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta of an entry's arrays (sealed already: an error here is a bug or
    a foreign entry; the caller treats it as damage all the same)."""
    doc = json.loads(arrays.pop(_META).tobytes().decode())
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("meta"), dict):
        raise ValueError("its key or meta is not this entry's")
    return arrays, doc["meta"]
