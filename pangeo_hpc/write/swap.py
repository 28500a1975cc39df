"""Put a finished folder in place of another: one writer at a time, with no moment when the
target is missing where the kernel allows it, and never cut in half by Ctrl-C.

:func:`~pangeo_hpc.write.outputs.atomic_dir` writes a folder under a temporary name and
calls :func:`swap_in` under :func:`target_lock`:

* **The lock** (:func:`target_lock`) is ``fcntl.flock`` on an empty file beside the
  target (:func:`~pangeo_hpc.write.leftovers.lock_name`), held only while the target is
  checked again and swapped, not while the outputs are computed. Two runs into one
  ``--out`` then take turns: the second checks what the first put there (its own
  result) instead of a folder half gone. ``flock`` excludes processes on one host on local
  file systems; across hosts on NFSv4 (and NFSv3 with the lock manager: Linux maps
  ``flock`` to byte-range locks there) and on Lustre mounted with ``-o flock`` (with
  ``localflock`` only processes on one node exclude each other). Where ``flock`` fails
  with ``ENOLCK``, ``EOPNOTSUPP`` or ``ENOSYS`` (Lustre without ``flock``, NFS without a
  lock manager) the swap goes on unlocked, with one :class:`LockWarning` per process.
  The lock file is removed on release by its holder; a waiter that then gets the lock of
  a removed file opens the new one (the usual check of ``fstat`` against ``stat``).
* **The swap** (:func:`swap_in`) is one ``renameat2(RENAME_EXCHANGE)`` (Linux 3.15 and
  later, glibc 2.28 for the wrapper, called through ``ctypes``): the new folder and the
  old exchange names at once, so a reader of the target sees the old folder or the new
  one, never nothing. Where the file system refuses (``EINVAL``: NFS, Lustre, or
  another kernel) it is two renames, the old folder to a unique hidden name
  (:func:`~pangeo_hpc.write.leftovers.temporary_name`) and the new one in its place:
  a reader may then find no target for that moment, never a mixed one.
* **Signals**: ``SIGINT`` (Ctrl-C) and ``SIGTERM`` arriving during the swap are held
  and delivered just after it and the lock's release (:class:`HeldSignals`), so an
  interrupted run leaves the old result or the new one, whole. Python runs signal
  handlers in the main thread only, so this is done there; a swap in another thread is
  not interrupted by them (the main thread gets the ``KeyboardInterrupt``), but a daemon
  thread still stops when the interpreter exits.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pangeo_hpc.write.leftovers import lock_name, temporary_name

#: ``flock`` errors of a file system without locks: the swap goes on unlocked
NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}
#: errors of ``renameat2`` where the kernel or file system cannot exchange: two renames
NO_EXCHANGE = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
#: signals held during a swap
HELD = (signal.SIGINT, signal.SIGTERM)


class LockWarning(UserWarning):
    """Writers of one output could not lock it (a file system without ``flock``).

    Examples
    --------
    >>> import warnings
    >>> from pathlib import Path
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", LockWarning)  # this job writes alone
    ...     with target_lock(Path("alone")) as locked:
    ...         pass
    """


def _find_renameat2() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not Linux, or a C library without the wrapper
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _find_renameat2()
_warned: list[str] = []


def exchange(a: Path, b: Path) -> bool:
    """Exchange the names of the existing ``a`` and ``b`` in one step; ``False`` (nothing
    done) where the kernel, C library or file system cannot.

    Parameters
    ----------
    a : Path
        An existing path.
    b : Path
        Another on the same file system.

    Returns
    -------
    bool
        Whether they were exchanged.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("a.txt").write_text("A"), Path("b.txt").write_text("B")
    >>> done = exchange(Path("a.txt"), Path("b.txt"))  # False where the kernel cannot
    >>> Path("a.txt").read_text() == ("B" if done else "A")
    True
    """
    if _renameat2 is None:
        return False
    rc = _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in NO_EXCHANGE:
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def swap_in(new: Path, target: Path) -> Path | None:
    """Put the folder ``new`` at ``target``, replacing what is there (call it under
    :func:`target_lock`, with signals held: :class:`HeldSignals`).

    Parameters
    ----------
    new : Path
        The finished folder.
    target : Path
        Where it goes.

    Returns
    -------
    Path or None
        Where the replaced folder now is (``new``'s name after an exchange, a hidden
        ``.NAME.old-*`` otherwise), for the caller to remove; ``None`` if there was none.

    Examples
    --------
    >>> from pathlib import Path
    >>> for name, text in (("new_folder", "new"), ("in_place", "old")):
    ...     Path(name).mkdir()
    ...     _ = Path(name, "a.txt").write_text(text)
    >>> with target_lock(Path("in_place")), deferred_signals():
    ...     old = swap_in(Path("new_folder"), Path("in_place"))
    >>> Path("in_place/a.txt").read_text(), Path(old, "a.txt").read_text()
    ('new', 'old')
    """
    if not os.path.lexists(target):
        os.rename(new, target)
        return None
    if exchange(new, target):
        return new
    old = temporary_name(target, "old")
    os.rename(target, old)
    os.rename(new, target)
    return old


class HeldSignals:
    """Hold ``signums`` (default ``SIGINT`` and ``SIGTERM``) from :meth:`hold` to the end of
    the ``with`` block, then deliver each caught one once: the handler that was installed
    runs (Ctrl-C's ``KeyboardInterrupt`` is raised after the block), or the default action
    is taken (``SIGTERM`` ends the process). Holding may start inside a block that ends
    first (a lock released before the delivery).

    Outside the main thread it does nothing: Python runs handlers in the main thread only
    (see the module's docstring). A signal whose handler was not installed from Python is
    not held.

    Parameters
    ----------
    signums : tuple[int, ...], optional
        The signals held.

    Examples
    --------
    >>> held = HeldSignals()
    >>> with held:
    ...     held.hold()  # Ctrl-C from here on waits for the end of the block
    ...     print("renamed into place")
    renamed into place
    """

    __slots__ = ("before", "caught", "signums")

    def __init__(self, signums: tuple[int, ...] = HELD) -> None:
        self.signums = signums
        self.before: dict[int, Any] = {}
        self.caught: list[int] = []

    def __enter__(self) -> HeldSignals:
        return self

    def hold(self) -> None:
        """Start holding the signals: each caught one is kept until the block ends (in the
        main thread only: elsewhere signals cannot be handled, and nothing is held).

        Examples
        --------
        >>> import signal
        >>> held = HeldSignals((signal.SIGINT,))
        >>> with held:
        ...     held.hold()
        """
        if threading.current_thread() is not threading.main_thread():
            return
        for s in self.signums:
            if s not in self.before and signal.getsignal(s) is not None:
                self.before[s] = signal.signal(s, self._caught)

    def _caught(self, signum: int, frame: object) -> None:
        self.caught.append(signum)

    def __exit__(self, *exc: object) -> None:
        before, self.before = self.before, {}
        for s, handler in before.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(self.caught):
            _deliver(s, before[s])


@contextmanager
def deferred_signals(signums: tuple[int, ...] = HELD) -> Iterator[None]:
    """Hold ``signums`` inside the block and deliver them as soon as it ends
    (:class:`HeldSignals` from the start of the block).

    Parameters
    ----------
    signums : tuple[int, ...], optional
        The signals held.

    Yields
    ------
    None
        Control, with the signals held.

    Examples
    --------
    >>> with deferred_signals():  # a Ctrl-C in here is raised after the block
    ...     print("swapped")
    swapped
    """
    with HeldSignals(signums) as held:
        held.hold()
        yield


def _deliver(signum: int, handler: Any) -> None:
    if callable(handler):
        handler(signum, sys._getframe(1))
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)  # the handler is back: the default action happens now
    # SIG_IGN: ignored, as it would have been


@contextmanager
def target_lock(target: Path) -> Iterator[bool]:
    """Hold the lock of writers of ``target`` (see the module's docstring); yields whether
    it is locked (``False`` on a file system without ``flock``, after one warning).

    Parameters
    ----------
    target : Path
        The output written.

    Yields
    ------
    bool
        Whether the lock is held.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("locked_results").mkdir()
    >>> with target_lock(Path("locked_results/era5-sst")) as locked:
    ...     print(locked)  # False on a file system without flock
    True
    """
    path = lock_name(target)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except PermissionError:  # another user's lock file: read access locks locally
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in NO_LOCKS:
                raise
            _unlocked(path, exc)
            try:
                yield False
            finally:
                path.unlink(missing_ok=True)
            return
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed it: lock the new one
    try:
        yield True
    finally:
        try:
            path.unlink(missing_ok=True)  # while held: a waiter then sees it is stale
        finally:
            os.close(fd)


def _unlocked(path: Path, exc: OSError) -> None:
    if _warned:
        return
    _warned.append(str(path))
    warnings.warn(
        f"cannot lock {str(path)!r} ({exc.strerror}): this file system has no flock (Lustre "
        "without -o flock, NFS without a lock manager), so two runs writing one output at "
        "once may fail; run them one after the other",
        LockWarning,
        stacklevel=4,
    )
