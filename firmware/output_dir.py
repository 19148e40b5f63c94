"""``-o DIR`` as a transaction: the project is written, built and run in a staging folder
beside DIR, and moved into DIR only when every step has succeeded. On any failure (a build
error, a failed run, Ctrl-C) the staging folder is removed and DIR is exactly as it was, so
a previous good project survives a failed one.

rip owns only the files it wrote: their list is the manifest ``DIR/.rip-manifest.json``.
A commit replaces the files of the previous manifest, removes those of them the new project
does not have (switching boards leaves no stale files of the previous board), and never
touches any other file: a user's file where rip would write is refused (exit 2) before
anything moves. Files move one rename at a time, each undone if a later one fails.

Known limit: a Pico build folder is configured in the staging folder, so a hand-run
``cmake`` in ``DIR/build`` must start from a fresh folder (``rm -rf DIR/build``); rip's own
``--build`` always does.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rip.core.errors import OutputError

MANIFEST = ".rip-manifest.json"
MANIFEST_VERSION = 1
SHOWN = 5  # file names a message lists before "..."


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
    once the project is in DIR."""

    target: Path
    path: Path
    created_parents: list[Path] = field(default_factory=list)
    committed: Committed | None = None

    def final(self, text: str) -> str:
        """A path the stages reported inside the staging folder, as it is after the move."""
        return text.replace(str(self.path), str(self.target))


def _show(names: list[str] | tuple[str, ...]) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def check_target(target: Path) -> None:
    """Refuse, before any work, an ``-o`` that cannot become a project folder: an existing
    file that is not a folder, or a place that cannot be written (one line, exit 2)."""
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


def cannot_write(folder: Path) -> str | None:
    """Why nothing can be created in ``folder``, or None. os.access says yes to root
    everywhere (and knows nothing of read-only mounts): only a real write tells."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rip-probe-", dir=folder))
    except OSError as e:
        return e.strerror or str(e)
    return None


def _owned(target: Path) -> set[str]:
    """The files the previous manifest says rip wrote in ``target`` (none without one).
    A manifest that is not rip's shape owns nothing, so nothing of the user's is at risk."""
    path = target / MANIFEST
    if not path.is_file():
        return set()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        return set()
    return {f for f in files if isinstance(f, str) and _safe(f)}


def _safe(rel: str) -> bool:
    """A manifest entry that stays inside DIR (no absolute path, no '..')."""
    p = PurePosixPath(rel)
    return bool(rel) and not p.is_absolute() and ".." not in p.parts and rel != MANIFEST


def _files(root: Path) -> list[str]:
    """Every file (and symlink) under ``root``, relative, sorted; folders are implied."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        links = [d for d in dirnames if (here / d).is_symlink()]
        for name in filenames + links:
            out.append((here / name).relative_to(root).as_posix())
    return sorted(f for f in out if f != MANIFEST)


def _in_the_way(target: Path, new: list[str], owned: set[str]) -> list[str]:
    """New files whose place in DIR holds something rip does not own: a user's file of the
    same name, a folder of that name, or a file where rip needs a folder."""
    blocked = []
    for rel in new:
        dest = target / rel
        parents = [PurePosixPath(p) for p in PurePosixPath(rel).parents if str(p) != "."]
        folder_is_a_file = any(
            (target / p).exists() and not (target / p).is_dir() and p.as_posix() not in owned
            for p in parents
        )
        taken = (dest.exists() or dest.is_symlink()) and (rel not in owned or dest.is_dir())
        if folder_is_a_file or taken:
            blocked.append(rel)
    return blocked


def check_ownership(stage: Staging) -> None:
    """Refuse early (before a build) a project whose files would overwrite a user's."""
    if not stage.target.is_dir():
        return
    blocked = _in_the_way(stage.target, _files(stage.path), _owned(stage.target))
    if blocked:
        raise OutputError(
            f"-o {stage.target}: {_show(blocked)} already there and not written by rip "
            f"(not in {MANIFEST}); rip never overwrites files it did not write: move them "
            "or choose another -o"
        )


def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.rename(src, dst)


def _write_manifest(folder: Path, files: list[str]) -> None:
    data = {"version": MANIFEST_VERSION, "written_by": "rip-compile", "files": files}
    tmp = folder / f"{MANIFEST}.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def _prune(target: Path, removed: list[str]) -> None:
    """Remove the folders that only held removed files (never one with a user's file)."""
    folders = {target / p for rel in removed for p in PurePosixPath(rel).parents if str(p) != "."}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):  # not empty: it holds something else
            folder.rmdir()


def commit(stage: Staging) -> Committed:
    """Move the staged project into DIR (see the module docstring); undone on failure."""
    target, new = stage.target, _files(stage.path)
    if not target.exists():
        _write_manifest(stage.path, new)
        os.rename(stage.path, target)
        return Committed(target, tuple(new), (), ())
    owned = _owned(target)
    blocked = _in_the_way(target, new, owned)
    if blocked:
        raise OutputError(
            f"-o {target}: {_show(blocked)} already there and not written by rip; "
            "move them or choose another -o"
        )
    present = sorted(f for f in owned if (target / f).is_file() or (target / f).is_symlink())
    backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.rip-old-", dir=target.parent))
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
    except BaseException:
        for rel in reversed(moved_in):
            _move(target / rel, stage.path / rel)
        for rel in reversed(moved_out):
            _move(backup / rel, target / rel)
        shutil.rmtree(backup, ignore_errors=True)
        raise
    shutil.rmtree(backup, ignore_errors=True)
    removed = sorted(set(present) - set(new))
    _prune(target, removed)
    shutil.rmtree(stage.path, ignore_errors=True)
    return Committed(target, tuple(new), tuple(sorted(set(present) & set(new))), tuple(removed))


@contextmanager
def transaction(target: Path) -> Iterator[Staging]:
    """``with transaction(DIR) as stage``: write, build and run in ``stage.path``; on a
    normal exit the project moves into DIR (``stage.committed``), on any exception (Ctrl-C
    included) the staging folder goes and DIR is untouched."""
    check_target(target)
    created = [p for p in reversed(target.absolute().parents) if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=f".{target.name}.rip-new-", dir=target.parent))
    except OSError as e:
        _remove_created(created)
        raise OutputError(f"-o {target}: cannot write there ({e.strerror})") from None
    stage = Staging(target, path, created)
    try:
        yield stage
        stage.committed = commit(stage)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        _remove_created(created)
        raise


def _remove_created(created: list[Path]) -> None:
    """The parent folders the transaction made for DIR, when it failed: as they were."""
    for folder in reversed(created):
        with suppress(OSError):
            folder.rmdir()
