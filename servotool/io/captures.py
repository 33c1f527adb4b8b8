"""Flight-recorder captures on disk: atomic JSONL publishing, the destination folder, and reading back.

A capture is one JSONL file: a header line (a JSON object with "format": "servotool-capture"), then one line
per sample. Publishing writes a hidden temporary file in the destination, flushes and fsyncs it, renames it
atomically to its published name and fsyncs the folder, so a reader of a published name sees either nothing
or the whole file. An interrupted publication can leave a `.*.tmp` file behind: it is reported when the
recorder connects (with the folder's size), never deleted; `recover_leftovers` (run by `incidents list`)
publishes one that holds a whole capture under its name. Nothing here deletes a capture.

The default destination is `<XDG state dir>/captures` (platformdirs user_state_dir("servotool"), or
$SERVOTOOL_STATE_DIR); inspecting it never creates it: only a publication does.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from servotool.errors import FileFormatError, Refused
from servotool.io.atomic import fsync_path
from servotool.io.paths import link_problem, state_dir

CAPTURE_FORMAT = "servotool-capture"
CAPTURE_VERSION = 1  # the one layout this reader knows (recorder.capture.FORMAT_VERSION writes it)
SUFFIX = ".jsonl"
TMP_SUFFIX = ".tmp"
SIZE_WARN_BYTES = 200 * 1024 * 1024
HEADER_MAX_BYTES = 1 << 20  # a header is a few KiB; a first line past this is no capture's


class CaptureFormatError(FileFormatError):
    """A file is not a complete servotool capture (the message names it and the reason)."""


class CaptureNotFound(Refused):
    """No capture in the destination matches what was asked for."""


def default_dest(explicit: str | Path | None = None) -> Path:
    """Where captures go: `explicit` (--out), else the XDG state dir's `captures` folder."""
    return Path(explicit) if explicit else state_dir() / "captures"


def _safe(obj: Any) -> Any:
    # NaN and inf are not JSON: they are written as null
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_safe(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return _safe(obj.item())
    return obj


def encode_line(obj: Mapping[str, Any]) -> bytes:
    """One JSONL line (compact JSON, NaN and inf as null, newline-terminated), UTF-8."""
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError):  # NaN, inf or numpy values somewhere: the slow, cleaning path
        text = json.dumps(_safe(dict(obj)), separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode()


def _free_name(dest: Path, name: str) -> Path:
    target = dest / name
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    k = 1
    while target.exists():
        k += 1
        target = dest / f"{stem}-{k}{SUFFIX}"
    return target


_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP)


def _link_free(tmp: Path, dest: Path, target: Path) -> Path:
    """Publish `tmp` as `target`, or as the next free name when another process took `target` meanwhile, and
    remove `tmp`; the published path. A file system without hard links gets a rename to a free name (its
    last instant unguarded)."""
    name = target.name
    while True:
        try:
            os.link(tmp, target)
        except FileExistsError:
            target = _free_name(dest, name)
            continue
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            os.replace(tmp, target)
            return target
        tmp.unlink()
        return target


def publish_capture(
    dest: Path, name: str, header: Mapping[str, Any], samples: Iterable[Mapping[str, Any]]
) -> Path:
    """Write header + samples as `dest/name` (a free variant if taken) atomically; return the path.

    Order: temporary file in dest, write, flush, fsync, a hard link to the published name (never over a
    file another recorder published there since the name was chosen: the next free name then), fsync of
    dest.
    The folder (and parents) is created here, at the first publication. OSError propagates (a full disk,
    a file in the folder's place) after this publication's own temporary file is removed: nothing
    half-written is left. Only a process killed mid-write leaves one (reported at the next connection).
    """
    if "/" in name or name.startswith("."):
        raise ValueError(f"capture name {name!r} must be a plain file name")
    dest.mkdir(parents=True, exist_ok=True)
    target = _free_name(dest, name if name.endswith(SUFFIX) else name + SUFFIX)
    tmp = dest / f".{target.name}.{os.getpid()}{TMP_SUFFIX}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(encode_line(header))
            for sample in samples:
                fh.write(encode_line(sample))
            fh.flush()
            os.fsync(fh.fileno())
        target = _link_free(tmp, dest, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()  # ours, never published: a partial file would only hold space on a full disk
        raise
    fsync_path(dest)
    return target


_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)" + re.escape(TMP_SUFFIX))


def _alive(pid: int) -> bool:
    """Whether a process `pid` runs on this host (one we may not signal runs too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@dataclass(frozen=True)
class Recovery:
    """What became of one temporary file in a destination: `published` is the capture's path when it was
    whole and is now published, else None and `reason` says why it was left where it was."""

    leftover: Path
    published: Path | None
    reason: str = ""


def recover_leftovers(dest: Path) -> list[Recovery]:
    """Publish every temporary file of `dest` that holds a complete capture (read back whole: its header,
    every line JSON, as many samples as the header counts) under the name it was being published as (a
    free variant if taken), as publish_capture would have; the rest are left untouched and said why (cut
    short, or still being written by a recorder that runs). Nothing is deleted: a published file's
    temporary name goes once its data has a name of its own. A missing folder is no error (nothing)."""
    out: list[Recovery] = []
    for tmp in inspect_destination(dest).leftovers:
        m = _LEFTOVER.fullmatch(tmp.name)
        if m is None or not m["name"].endswith(SUFFIX) or m["name"].startswith("."):
            out.append(Recovery(tmp, None, "not named as a capture being published"))
            continue
        if int(m["pid"]) != os.getpid() and _alive(int(m["pid"])):
            out.append(Recovery(tmp, None, f"process {m['pid']} may still be writing it"))
            continue
        try:
            read_capture(tmp)
        except CaptureFormatError as exc:
            out.append(Recovery(tmp, None, f"incomplete ({str(exc).removeprefix(f'{tmp}: ')})"))
            continue
        try:
            fsync_path(tmp)
            target = _link_free(tmp, dest, _free_name(dest, m["name"]))
            fsync_path(dest)
        except OSError as exc:
            out.append(Recovery(tmp, None, f"could not be published ({exc.strerror or exc})"))
            continue
        out.append(Recovery(tmp, target))
    return out


def dest_problem(dest: Path) -> str | None:
    """Why captures could not be published in `dest` (a file in the way, no write permission), checked
    without creating anything; None when the first publication can create or use it. A dangling link, a
    link loop or a link to a file is refused first (see paths.link_problem): a capture published through a
    dangling link was lost ("File exists")."""
    if problem := link_problem(dest, "--out", "folder"):
        return problem
    probe = dest
    while not probe.exists():
        if probe.parent == probe:
            return f"{dest}: no existing parent folder"
        probe = probe.parent
    where = f"{dest}" if probe == dest else f"{dest}: {probe}"  # the path named once when it is the one
    if not probe.is_dir():
        return f"{where} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{where} is not writable"
    return None


@dataclass
class DestinationReport:
    """What a destination holds: published captures, their total size, leftover temporary files."""

    path: Path
    exists: bool
    captures: int = 0
    size_bytes: int = 0
    leftovers: list[Path] = field(default_factory=list)

    def warnings(self, size_warn_bytes: int = SIZE_WARN_BYTES) -> list[str]:
        """One line per thing worth telling at connection; the folder is never changed."""
        out = []
        if self.size_bytes > size_warn_bytes:
            out.append(
                f"{self.path} holds {self.size_bytes / 1e6:.1f} MB of captures "
                f"({self.captures} files); nothing is deleted automatically"
            )
        if self.leftovers:
            names = ", ".join(p.name for p in self.leftovers[:3])
            more = f" and {len(self.leftovers) - 3} more" if len(self.leftovers) > 3 else ""
            out.append(
                f"{self.path} holds {len(self.leftovers)} temporary file(s) from an interrupted "
                f"publication: {names}{more} (`servotool incidents list` publishes each that is a whole "
                "capture)"
            )
        return out


def inspect_destination(dest: Path) -> DestinationReport:
    """Size and leftovers of a destination, read only: a missing folder is reported, never created."""
    if not dest.is_dir():
        return DestinationReport(dest, exists=False)
    report = DestinationReport(dest, exists=True)
    for entry in os.scandir(dest):
        if not entry.is_file(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            size = entry.stat(follow_symlinks=False).st_size
            report.size_bytes += size
        if entry.name.startswith(".") and entry.name.endswith(TMP_SUFFIX):
            report.leftovers.append(Path(entry.path))
        elif entry.name.endswith(SUFFIX):
            report.captures += 1
    report.leftovers.sort()
    return report


def _open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, when it is a regular file (through links); CaptureFormatError otherwise: a
    FIFO named like a capture would wait for a writer for ever, and a device would never end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of waiting
    except OSError as exc:
        raise CaptureFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CaptureFormatError(f"{path}: not a regular file, so no capture")
    return os.fdopen(fd, "rb")


def read_header(path: Path) -> dict[str, Any]:
    """The header of a capture file (first line only, at most HEADER_MAX_BYTES). CaptureFormatError if it is
    not one, or is one of another format version than CAPTURE_VERSION."""
    try:
        with _open_regular(path) as fh:
            first = fh.readline(HEADER_MAX_BYTES + 1)
    except OSError as exc:
        raise CaptureFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(first) > HEADER_MAX_BYTES:
        raise CaptureFormatError(
            f"{path}: line 1 is longer than {HEADER_MAX_BYTES >> 20} MiB: not a servotool capture"
        )
    try:
        header = json.loads(first)
    except ValueError:
        raise CaptureFormatError(f"{path}: line 1 is not JSON: not a servotool capture") from None
    if not isinstance(header, dict) or header.get("format") != CAPTURE_FORMAT:
        raise CaptureFormatError(f"{path}: not a servotool capture (no '{CAPTURE_FORMAT}' header)")
    version = header.get("version")
    if type(version) is not int or version != CAPTURE_VERSION:  # another layout would be misread, not refused
        raise CaptureFormatError(
            f"{path}: capture format version {json.dumps(version)}; this servotool "
            f"reads version {CAPTURE_VERSION} only"
        )
    return header


def read_capture(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and samples of a capture; CaptureFormatError names the file and line when it is not a
    complete capture (a bad line, or fewer samples than its header counts)."""
    header = read_header(path)
    samples: list[dict[str, Any]] = []
    with _open_regular(path) as fh:
        fh.readline()
        for n, raw in enumerate(fh, start=2):
            try:
                samples.append(json.loads(raw))
            except ValueError:
                raise CaptureFormatError(f"{path}: line {n} is not JSON") from None
    counts = header.get("counts") or {}
    expected = sum(int(v) for v in counts.values()) if isinstance(counts, dict) else -1
    if expected != len(samples):
        raise CaptureFormatError(f"{path}: header counts {expected} samples, the file holds {len(samples)}")
    return header, samples


def list_captures(dest: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Published captures of a destination, oldest name first, each with its header (None if unreadable)."""
    if not dest.is_dir():
        return []
    out: list[tuple[Path, dict[str, Any] | None]] = []
    for path in sorted(p for p in dest.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".")):
        try:
            out.append((path, read_header(path)))
        except CaptureFormatError:
            out.append((path, None))
    return out


def find_capture(dest: Path, ref: str) -> Path:
    """A capture by path, file name, id, unique id prefix (with or without `capture_`, so the time `incidents
    list` shows will do), list number (1 = oldest; -1 or "last" = newest). An empty ref (or a bare
    `capture_`) is refused: as a prefix it would pick any capture, and as a path it is the current folder."""
    if ref.strip() in ("", "capture_"):
        raise CaptureNotFound(
            f"{ref!r} names no capture: give its id, number, time or path (see `servotool incidents list`)"
        )
    direct = Path(ref)
    if direct.is_file():
        return direct
    listed = list_captures(dest)
    paths = [p for p, _ in listed]
    readable = [p for p, head in listed if head is not None]
    if ref in ("last", "latest") and readable:  # the newest capture, not a stray file sorting after it
        return readable[-1]
    with contextlib.suppress(ValueError):
        k = int(ref)
        if paths and 1 <= abs(k) <= len(paths):
            return paths[k - 1] if k > 0 else paths[k]
    exact = [p for p in paths if p.name in (ref, ref + SUFFIX)]
    if exact:
        return exact[0]
    matches = [p for p in paths if p.name.startswith(ref) or p.name.startswith("capture_" + ref)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CaptureNotFound(f"{ref!r} matches {len(matches)} captures in {dest}; give more of the id")
    raise CaptureNotFound(f"no capture {ref!r} in {dest} (see `servotool incidents list`)")
