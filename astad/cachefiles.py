"""The disk cache's files: a private directory, a secret key, sealed entries.

Trust model.  An entry holds generated Python that a later process compiles
and runs, so it is trusted only if this user wrote it:

* astad keeps its files in its own subdirectory, :data:`SUBDIR`, of the cache
  directory.  Both directories must be owned by the current (effective) user
  and writable by nobody else; astad creates them with mode 0700.  A
  directory that fails the check is not used (one :class:`CacheWarning` per
  directory and process) and the derivative is computed afresh.
* :data:`KEY` in that subdirectory holds a random 256-bit key (mode 0600,
  owned by the user).  Every entry is sealed with an HMAC-SHA256 of its name
  and contents under that key, and the seal is checked before anything in
  the entry is read, let alone compiled.  A key that is missing, damaged,
  not a regular file, or readable or writable by others is replaced by a new
  one (which invalidates every entry sealed with the old one).
* Every file is opened relative to the checked directory's descriptor and
  without following symbolic links; an entry must be a regular file owned by
  the user and writable by nobody else.  Writes go to a fresh temporary file
  (mode 0600) that replaces the entry atomically.
* Only names astad writes (:data:`ENTRY`, :data:`TEMP`) are ever deleted:
  by :func:`clear`, and by :func:`evict`, which keeps the most recently used
  entries within a count and a size.

Platforms without POSIX ownership and ``O_NOFOLLOW`` (Windows) get no disk
cache.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import time
import warnings
from pathlib import Path
from typing import Iterator

SUBDIR = "astad-derivatives"
KEY = "hmac-key"
ENTRY = re.compile(r"[A-Za-z0-9_]{1,40}-[0-9a-f]{32}\.json\Z")
TEMP = re.compile(r"\.tmp-[0-9a-f]{16}\Z")
MAGIC = b"astad-entry 2\n"
MAX_ENTRY_BYTES = 64 * 2**20
STALE_TEMP_S = 3600.0


class CacheWarning(UserWarning):
    """A cache directory astad will not use (not the user's, or writable by others)."""


_WARNED: set[tuple[str, str]] = set()
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def supported() -> bool:
    """Whether this platform lets astad check owners and refuse symbolic links."""
    return (hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
            and os.open in os.supports_dir_fd and os.link in os.supports_dir_fd and os.scandir in os.supports_fd)


def _unsafe(st: os.stat_result, is_dir: bool) -> str | None:
    """Why a file or directory with status ``st`` is not to be trusted (None: it is)."""
    if is_dir and not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if not is_dir and not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by the current user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"it is writable by {'group' if st.st_mode & 0o020 else 'others'} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _warn(path: Path, reason: str) -> None:
    if (str(path), reason) not in _WARNED:
        _WARNED.add((str(path), reason))
        warnings.warn(f"astad: not using the disk cache in {path}: {reason}. Make it private "
                      f"(chmod 700, owned by you) or set ASTAD_CACHE_DIR to a directory of your own",
                      CacheWarning, stacklevel=4)


class _Untrusted(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _open_dir(path: str | Path, dir_fd: int | None, create: bool, follow: bool) -> int:
    """A descriptor of a directory that passes the trust check (created first, mode 0700, when ``create``)."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700, dir_fd=dir_fd)
    try:
        fd = os.open(path, _DIR_FLAGS | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(os.lstat(path, dir_fd=dir_fd).st_mode):
            raise _Untrusted("it is a symbolic link") from None
        raise
    reason = _unsafe(os.fstat(fd), is_dir=True)
    if reason is not None:
        os.close(fd)
        raise _Untrusted(reason)
    return fd


def entry_name(function_name: str, key: str) -> str:
    """The file name of an entry (matches :data:`ENTRY`)."""
    return f"{re.sub(r'[^A-Za-z0-9_]', '_', function_name)[:40]}-{key[:32]}.json"


def _make_parents(base: Path) -> None:
    """Create the missing directories above ``base``, private (0700) as ``mkdir -p -m 700`` would not."""
    missing = [p for p in base.absolute().parents if not p.exists()]
    for p in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, 0o700)


def _open_private(base: Path, create: bool, fds: list[int]) -> int | None:
    if not supported():
        return None
    where = base
    try:
        if create:
            _make_parents(base)
        fds.append(_open_dir(base, None, create, follow=True))
        where = base / SUBDIR
        fds.append(_open_dir(SUBDIR, fds[0], create, follow=False))
    except _Untrusted as e:
        _warn(where, e.reason)
        return None
    except OSError:
        return None  # missing (nothing cached yet) or impossible to create: no disk cache
    return fds[-1]


@contextlib.contextmanager
def private_dir(base: Path, create: bool) -> Iterator[int | None]:
    """A descriptor of astad's own subdirectory of ``base`` if both are the
    user's and private (created, mode 0700, when ``create``), else None."""
    fds: list[int] = []
    try:
        yield _open_private(base, create, fds)
    finally:
        for fd in fds:
            os.close(fd)


# --------------------------------------------------------------------------- the key


def _read_key(dfd: int) -> bytes | None | bool:
    """The key (bytes), None when there is none, False when the file is not to be trusted."""
    try:
        fd = os.open(KEY, _FILE_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError:
        return False  # a symbolic link (ELOOP), a FIFO, unreadable
    try:
        st = os.fstat(fd)
        if _unsafe(st, is_dir=False) is not None or st.st_mode & 0o077:
            return False
        data = os.read(fd, 100)
    finally:
        os.close(fd)
    if not re.fullmatch(rb"[0-9a-f]{64}\n", data):
        return False
    return bytes.fromhex(data[:64].decode())


def _write_temp(dfd: int, data: bytes) -> str:
    """A new file of mode 0600 holding ``data`` in the directory; its name."""
    name = f".tmp-{secrets.token_hex(8)}"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                 dir_fd=dfd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        os.unlink(name, dir_fd=dfd)
        raise
    os.close(fd)
    return name


def key(dfd: int, create: bool) -> bytes | None:
    """The directory's secret key; when ``create``, a missing or untrusted one is
    replaced by a new one (two processes doing so at once agree on one key)."""
    found = _read_key(dfd)
    if isinstance(found, bytes) or not create:
        return found or None
    new = secrets.token_bytes(32)
    tmp = _write_temp(dfd, new.hex().encode() + b"\n")
    try:
        if found is None:  # none yet: link it in only if nobody else has meanwhile
            try:
                os.link(tmp, KEY, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                again = _read_key(dfd)
                return again if isinstance(again, bytes) else None
        else:
            os.replace(tmp, KEY, src_dir_fd=dfd, dst_dir_fd=dfd)
        return new
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)


# --------------------------------------------------------------------------- entries


def _mac(secret: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(secret, b"astad entry\0" + name.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def seal(secret: bytes, name: str, payload: bytes) -> bytes:
    """The file contents of entry ``name``: a header, the HMAC, the payload."""
    return MAGIC + _mac(secret, name, payload) + b"\n" + payload


def unseal(secret: bytes, name: str, data: bytes) -> bytes | None:
    """The payload of a sealed entry, or None when the seal does not match."""
    head = len(MAGIC) + 65
    if len(data) < head or not data.startswith(MAGIC) or data[head - 1:head] != b"\n":
        return None
    payload = data[head:]
    return payload if hmac.compare_digest(data[len(MAGIC):head - 1], _mac(secret, name, payload)) else None


def read(dfd: int, secret: bytes, name: str) -> bytes | None:
    """The authenticated payload of entry ``name``, or None (missing, not a
    regular file of the user's, writable by others, too big, badly sealed)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if _unsafe(st, is_dir=False) is not None or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        with contextlib.suppress(OSError):
            os.utime(fd)  # recently used: eviction keeps it
    finally:
        os.close(fd)
    return unseal(secret, name, b"".join(chunks))


def write(dfd: int, secret: bytes, name: str, payload: bytes) -> None:
    """Seal and write entry ``name`` atomically (readers see the old or the new file)."""
    tmp = _write_temp(dfd, seal(secret, name, payload))
    try:
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _ours(dfd: int) -> list[tuple[str, os.stat_result]]:
    """The entries and temporary files in the directory, with their status."""
    found = []
    with os.scandir(dfd) as it:
        for e in it:
            if ENTRY.match(e.name) or TEMP.match(e.name):
                with contextlib.suppress(OSError):
                    found.append((e.name, e.stat(follow_symlinks=False)))
    return found


def _unlink(dfd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError, PermissionError):
        os.unlink(name, dir_fd=dfd)


def evict(dfd: int, max_entries: int, max_bytes: int) -> None:
    """Delete the least recently used entries beyond ``max_entries`` or
    ``max_bytes`` in all, and temporary files left by a crashed writer."""
    now = time.time()
    entries = []
    for name, st in _ours(dfd):
        if ENTRY.match(name):
            entries.append((st.st_mtime, st.st_size, name))
        elif now - st.st_mtime > STALE_TEMP_S:
            _unlink(dfd, name)
    entries.sort(reverse=True)  # the most recently used first
    total = 0
    for i, (_, size, name) in enumerate(entries):
        total += size
        if i >= max_entries or total > max_bytes:
            _unlink(dfd, name)


def clear(dfd: int) -> None:
    """Delete every entry and temporary file astad wrote (the key stays)."""
    for name, _ in _ours(dfd):
        _unlink(dfd, name)
