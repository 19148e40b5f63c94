"""``-o DIR`` as a transaction: the project is written, built and run in a staging folder
beside DIR, and moved into DIR only when every step has succeeded. On any failure (a build
error, a failed run, Ctrl-C, SIGTERM, a full disk) the staging folder is removed and DIR is
exactly as it was, so a previous good project survives a failed one. A staging or backup
folder left by a run that could not clean up (SIGKILL, a power cut) carries its host and
process id in its name; the next run into the same DIR removes those whose process is gone.

rip owns only the regular files it wrote: their list is the manifest
``DIR/.rip-manifest.json``. A commit replaces the files of the previous manifest, removes
those of them the new project does not have (switching boards leaves no stale files of the
previous board), and never touches any other file: a user's file where rip would write is
refused (exit 2) before anything moves. Files move one rename at a time, each undone if a
later one fails.

Nothing inside DIR is followed: a symbolic link anywhere on a path rip writes, replaces or
deletes (a folder such as ``kernels/``, a file the manifest lists, the manifest or its
temporary file) is refused with one line naming the link, before planning where the path
is known then and again before anything moves; the manifest is written with ``O_NOFOLLOW``
and ``O_EXCL``. DIR itself may be a link to a folder (the user named it): rip works in the
folder it points to. A folder inside DIR that is another file system (a mount point) is
refused the same way, since a rename cannot cross it; when DIR itself is a mount point the
staging folder goes inside DIR, so that the renames stay on one file system.

A Pico ``DIR/build`` holds only the build's outputs and its log: rip configures and builds
outside DIR (``rip.firmware.pico_build``), so nothing in DIR refers to the staging folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rip.core import jsonio
from rip.core.errors import DiskFullError, OutputError, is_no_space

MANIFEST = ".rip-manifest.json"
MANIFEST_TMP = f"{MANIFEST}.tmp"
MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 1 << 20  # ~100 files of a project take ~5 KB
SHOWN = 5  # file names a message lists before "..."
STAGING, BACKUP = "rip-new", "rip-old"  # what a leftover folder held: the new or old files


@dataclass(frozen=True)
class Committed:
    """What a commit did to DIR, in paths relative to it, so the CLI can say which files
    it replaced and removed."""

    directory: Path
    written: tuple[str, ...]  # every file of the new project (the new manifest)
    replaced: tuple[str, ...]  # files of the previous manifest overwritten
    removed: tuple[str, ...]  # files of the previous manifest the new project has not


@dataclass
class Staging:
    """One ``-o DIR`` transaction: ``path`` is where the stages write; ``committed`` is set
    once the project is in DIR; ``stale`` lists the leftover folders of dead runs it
    removed."""

    target: Path
    path: Path
    created_parents: list[Path] = field(default_factory=list)
    committed: Committed | None = None
    stale: tuple[str, ...] = ()

    def final(self, text: str) -> str:
        """A path the stages reported inside the staging folder, as it is after the move."""
        return text.replace(str(self.path), str(self.target))


def _show(names: Iterable[str]) -> str:
    names = list(names)
    more = f", ... ({len(names)} in all)" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


# ---- where the folders are ------------------------------------------------------------------
def _real_target(target: Path) -> Path:
    """DIR, or the folder it links to when DIR itself is a symbolic link."""
    if not target.is_symlink():
        return target
    if not target.is_dir():
        raise OutputError(
            f"-o {target}: a symbolic link to {os.readlink(target)}, which is not a folder"
        )
    return target.resolve()


def _mount_points() -> set[str]:
    """Every mount point of this process (Linux ``/proc/self/mountinfo``; empty elsewhere):
    a bind mount of the same file system has the same ``st_dev`` as its parent, yet a
    rename across it fails (EXDEV) all the same."""
    try:
        text = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    points = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]))
    return points


def _is_mount(path: Path, device: int, mounts: set[str]) -> bool:
    return os.lstat(path).st_dev != device or os.path.realpath(path) in mounts


def _staging_home(target: Path) -> Path:
    """Where the staging and backup folders go: beside DIR, or inside it when DIR is a
    mount point (a rename from beside it would cross file systems)."""
    if target.is_dir() and _is_mount(target, os.lstat(target.parent).st_dev, _mount_points()):
        return target
    return target.parent


def _node() -> str:
    """This machine's name as a folder name may hold it (a -o on a shared file system may
    hold the leftovers of several machines; only this one's processes can be looked at)."""
    name = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    return re.sub(r"[^A-Za-z0-9]", "", name)[:24] or "host"


def _prefix(target: Path, kind: str) -> str:
    return f".{target.name}.{kind}-{_node()}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, as another user's process
        return True
    return True


def remove_stale(target: Path) -> list[str]:
    """Remove the staging and backup folders of earlier runs into DIR on this machine whose
    process is gone (killed before it could clean up); the names removed. Only real
    folders of this user whose names rip makes (``.DIR.rip-new-HOST-PID-*``) are candidates,
    so a user's folder is never touched; ``shutil.rmtree`` follows no link inside them."""
    pattern = re.compile(
        rf"\.{re.escape(target.name)}\.(?:{STAGING}|{BACKUP})-{re.escape(_node())}-(\d+)-\w+"
    )
    homes = [target.parent] + ([target] if target.is_dir() and not target.is_symlink() else [])
    removed = []
    for home in homes:
        with suppress(OSError):
            for entry in os.scandir(home):
                m = pattern.fullmatch(entry.name)
                if m is None or not entry.is_dir(follow_symlinks=False):
                    continue
                pid = int(m[1])
                owner = entry.stat(follow_symlinks=False).st_uid
                mine = not hasattr(os, "getuid") or owner == os.getuid()
                if mine and pid != os.getpid() and not _pid_alive(pid):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.name)
    return removed


# ---- checks before anything is written ------------------------------------------------------
def check_target(target: Path) -> None:
    """Refuse, before any work, an ``-o`` that cannot become a project folder: an existing
    file that is not a folder, a place that cannot be written, a symbolic link or another
    file system on a path the previous project's manifest says rip will replace (one line,
    exit 2)."""
    if target.is_symlink():
        target = _real_target(target)
    if target.exists() and not target.is_dir():
        raise OutputError(f"-o {target}: exists and is not a folder")
    probe = target
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise OutputError(f"-o {target}: {probe} is a file, not a folder")
    why = cannot_write(probe)
    if why:
        raise OutputError(f"-o {target}: cannot write in {probe} ({why})")
    if target.is_dir():
        _check_paths(target, [MANIFEST, MANIFEST_TMP])
        _check_paths(target, sorted(_owned(target)))


def cannot_write(folder: Path) -> str | None:
    """Why nothing can be created in ``folder``, or None. os.access says yes to root
    everywhere (and knows nothing of read-only mounts): only a real write tells."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rip-probe-", dir=folder))
    except OSError as e:
        return e.strerror or str(e)
    return None


def _first_link(root: Path, rel: str) -> str | None:
    """The first component of ``rel`` (a path inside ``root``) that is a symbolic link,
    relative to ``root``; None when none is (components that do not exist are not)."""
    path, parts = root, PurePosixPath(rel).parts
    for k, part in enumerate(parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            return "/".join(parts[: k + 1])
        if not stat.S_ISDIR(mode):
            return None
    return None


def _mount_on(root: Path, rel: str, device: int, mounts: set[str]) -> str | None:
    """The first existing component of ``rel`` that is a mount point (another file system
    than ``device``, or a bind mount), relative to ``root``."""
    path, parts = root, PurePosixPath(rel).parts
    for k, part in enumerate(parts):
        path = path / part
        if not os.path.lexists(path):
            return None
        if _is_mount(path, device, mounts):
            return "/".join(parts[: k + 1])
    return None


def _check_paths(target: Path, rels: Iterable[str]) -> None:
    """Every path rip will write, replace or delete in DIR: no symbolic link on it, and no
    mount point (one line naming the first, exit 2)."""
    device, mounts = os.stat(_staging_home(target)).st_dev, _mount_points()
    for rel in rels:
        link = _first_link(target, rel)
        if link is not None:
            raise OutputError(
                f"-o {target}: {link} is a symbolic link (to {os.readlink(target / link)}); "
                "rip never writes, replaces or deletes through a link inside -o: remove it "
                "or choose another -o"
            )
        mount = _mount_on(target, rel, device, mounts)
        if mount is not None:
            raise OutputError(_cross_device(target, mount))


def _cross_device(target: Path, mount: str) -> str:
    return (
        f"-o {target}: {mount} is on another file system (a mount point inside -o); rip "
        "moves the finished project into -o by rename, which cannot cross file systems: "
        "unmount it or choose another -o"
    )


def _owned(target: Path) -> set[str]:
    """The files the previous manifest says rip wrote in ``target`` (none without one).
    A manifest that is not rip's shape owns nothing, so nothing of the user's is at risk.
    It is read without following a link (a link there is refused by ``_check_paths``)."""
    try:
        fd = os.open(target / MANIFEST, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return set()
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return set()
            data = jsonio.loads(f.read(MAX_MANIFEST_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        return set()
    return {f for f in files if isinstance(f, str) and _safe(f)}


def _safe(rel: str) -> bool:
    """A manifest entry that stays inside DIR (no absolute path, no '..', no empty or '.'
    component, no control character)."""
    p = PurePosixPath(rel)
    return (
        bool(rel)
        and rel == p.as_posix()  # no empty or "." component: the form rip writes
        and rel != "."
        and not p.is_absolute()
        and ".." not in p.parts
        and rel not in (MANIFEST, MANIFEST_TMP)
        and "\\" not in rel
        and all(ch >= " " for ch in rel)
    )


def _is_file(path: Path) -> bool:
    """A regular file, not followed if it is a link."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _files(root: Path) -> list[str]:
    """Every regular file under ``root``, relative, sorted; folders are implied. Links are
    not followed, not listed and not moved (rip writes none)."""
    out = []
    for dirpath, _dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        out += [(here / n).relative_to(root).as_posix() for n in filenames if _is_file(here / n)]
    return sorted(f for f in out if f not in (MANIFEST, MANIFEST_TMP))


def _in_the_way(target: Path, new: list[str], owned: set[str]) -> list[str]:
    """New files whose place in DIR holds something rip does not own: a user's file of the
    same name, a folder of that name, or a file where rip needs a folder."""
    blocked = []
    for rel in new:
        dest = target / rel
        parents = [PurePosixPath(p) for p in PurePosixPath(rel).parents if str(p) != "."]
        folder_is_a_file = any(
            os.path.lexists(target / p) and not (target / p).is_dir() and p.as_posix() not in owned
            for p in parents
        )
        taken = os.path.lexists(dest) and (rel not in owned or not _is_file(dest))
        if folder_is_a_file or taken:
            blocked.append(rel)
    return blocked


def check_ownership(stage: Staging) -> None:
    """Refuse early (before a build) a project whose files would overwrite a user's, or
    that rip would write through a link or across a mount point."""
    if not stage.target.is_dir():
        return
    new, owned = _files(stage.path), _owned(stage.target)
    _check_paths(stage.target, [MANIFEST, MANIFEST_TMP, *new, *sorted(owned)])
    blocked = _in_the_way(stage.target, new, owned)
    if blocked:
        raise OutputError(
            f"-o {stage.target}: {_show(blocked)} already there and not written by rip "
            f"(not in {MANIFEST}); rip never overwrites files it did not write: move them "
            "or choose another -o"
        )


# ---- the commit ----------------------------------------------------------------------------
def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.rename(src, dst)


def _write_manifest(folder: Path, files: list[str]) -> None:
    """The manifest, written beside its place and renamed onto it. The temporary file is
    created with O_EXCL and O_NOFOLLOW: never through a link, never over a file of the
    user's (a leftover regular file of rip's own crashed commit is removed first)."""
    data = {"version": MANIFEST_VERSION, "written_by": "rip-compile", "files": files}
    tmp = folder / MANIFEST_TMP
    if _is_file(tmp):
        tmp.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(jsonio.dumps(data, indent=1) + "\n")
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        with suppress(OSError):
            tmp.unlink()
        raise


def _prune(target: Path, removed: list[str]) -> None:
    """Remove the folders that only held removed files (never one with a user's file)."""
    folders = {target / p for rel in removed for p in PurePosixPath(rel).parents if str(p) != "."}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):  # not empty: it holds something else (or it is a link)
            if not folder.is_symlink():
                folder.rmdir()


def commit(stage: Staging) -> Committed:
    """Move the staged project into DIR (see the module docstring); undone on failure."""
    target, new = stage.target, _files(stage.path)
    if not os.path.lexists(target):
        _write_manifest(stage.path, new)
        os.rename(stage.path, target)
        return Committed(target, tuple(new), (), ())
    owned = _owned(target)
    _check_paths(target, [MANIFEST, MANIFEST_TMP, *new, *sorted(owned)])
    blocked = _in_the_way(target, new, owned)
    if blocked:
        raise OutputError(
            f"-o {target}: {_show(blocked)} already there and not written by rip; "
            "move them or choose another -o"
        )
    present = sorted(f for f in owned if _is_file(target / f))
    backup = Path(tempfile.mkdtemp(prefix=_prefix(target, BACKUP), dir=stage.path.parent))
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for rel in present:
            _move(target / rel, backup / rel)
            moved_out.append(rel)
        for rel in new:
            _move(stage.path / rel, target / rel)
            moved_in.append(rel)
        _write_manifest(target, new)
    except BaseException as e:
        for rel in reversed(moved_in):
            _move(target / rel, stage.path / rel)
        for rel in reversed(moved_out):
            _move(backup / rel, target / rel)
        shutil.rmtree(backup, ignore_errors=True)
        if isinstance(e, OSError) and e.errno == errno.EXDEV:
            raise OutputError(_cross_device(target, _crossed(target, e))) from None
        raise
    shutil.rmtree(backup, ignore_errors=True)
    removed = sorted(set(present) - set(new))
    _prune(target, removed)
    shutil.rmtree(stage.path, ignore_errors=True)
    return Committed(target, tuple(new), tuple(sorted(set(present) & set(new))), tuple(removed))


def _crossed(target: Path, e: OSError) -> str:
    """The folder in DIR a rename failed to cross into (EXDEV), for the message."""
    for name in (e.filename2, e.filename):
        with contextlib.suppress(TypeError, ValueError):
            rel = Path(name).relative_to(target)
            return rel.parent.as_posix() if rel.parent != Path(".") else rel.as_posix()
    return "a folder"


def _no_space(target: Path, staging: Path, e: OSError) -> DiskFullError:
    """ENOSPC while the project was written, built or moved: one line naming the file."""
    name = Path(e.filename) if e.filename else None
    if name is not None:
        with contextlib.suppress(ValueError):
            name = name.relative_to(staging)
    writing = f" while writing {name}" if name is not None else ""
    return DiskFullError(
        f"-o {target}: no space left on the device{writing} ({e.strerror}); nothing was "
        "changed in -o: free some space and run again"
    )


@contextmanager
def transaction(target: Path) -> Iterator[Staging]:
    """``with transaction(DIR) as stage``: write, build and run in ``stage.path``; on a
    normal exit the project moves into DIR (``stage.committed``), on any exception (Ctrl-C
    and SIGTERM included) the staging folder goes and DIR is untouched."""
    check_target(target)
    target = _real_target(target)
    stale = remove_stale(target)
    created = [p for p in reversed(target.absolute().parents) if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        home = _staging_home(target)
        path = Path(tempfile.mkdtemp(prefix=_prefix(target, STAGING), dir=home))
    except OSError as e:
        _remove_created(created)
        if is_no_space(e):
            raise _no_space(target, target.parent, e) from None
        raise OutputError(f"-o {target}: cannot write there ({e.strerror})") from None
    stage = Staging(target, path, created, stale=tuple(stale))
    try:
        yield stage
        stage.committed = commit(stage)
    except BaseException as e:
        shutil.rmtree(path, ignore_errors=True)
        _remove_created(created)
        if is_no_space(e):
            raise _no_space(target, path, e) from None  # type: ignore[arg-type]
        raise


def _remove_created(created: list[Path]) -> None:
    """The parent folders the transaction made for DIR, when it failed: as they were."""
    for folder in reversed(created):
        with suppress(OSError):
            folder.rmdir()
