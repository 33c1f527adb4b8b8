"""Many files analysed on a pool of processes, results in file order; this process analyses the files
itself until the workers answer."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from servotool.io.jsondoc import compact
from servotool.runs.offline.discovery import Problem
from servotool.runs.offline.per_file import (
    FileAnalysis,
    NotAnalyzable,
    SweepAnalysis,
    analyze_any,
)

Outcome = FileAnalysis | SweepAnalysis | Problem


def _analyse_one(path: Path, keep_recording: bool, encode: bool = False) -> Outcome:
    try:
        done = analyze_any(path, keep_recording)
    except NotAnalyzable as exc:
        return Problem(str(path), _strip_path(str(exc), path))
    if encode:  # in the worker, while the other workers analyse: not all in this process after the last file
        done.encoded = compact(done.to_dict())
    return done


def _quiet_worker() -> None:
    # a worker never writes to stdout: numerical libraries' console noise goes to stderr
    with contextlib.suppress(OSError):
        os.dup2(2, 1)


def _analyse_chunk(paths: Sequence[Path], keep_recording: bool, encode: bool) -> list[Outcome]:
    return [_analyse_one(p, keep_recording, encode) for p in paths]


def _worker_ready() -> bool:
    return True


# "fork" copies this process, its libraries already imported, in milliseconds; "forkserver" starts a server
# that imports numpy, scipy and pyarrow first (a second or more). None: fork where that is safe (see _context)
START_METHOD: str | None = None
# chunks shrink as the files run out: each takes 1/(CHUNK_SHARE x workers) of the files left, at most
# MAX_CHUNK of them (the progress bar moves at least that often) and at least one. Each chunk costs the
# command about half a millisecond of hand-over; the small last ones leave little of one core idle
CHUNK_SHARE = 4
MAX_CHUNK = 32
FORK_START_WAIT_S = 5.0  # forked workers answer in milliseconds: wait for them rather than analyse here


def _context() -> multiprocessing.context.BaseContext:
    """fork on Linux from a process with one thread (a fork copies no other thread, and a lock another
    thread held would stay held in the child), the forkserver otherwise."""
    method = START_METHOD
    if method is None:
        single = threading.active_count() == 1
        method = "fork" if single and sys.platform.startswith("linux") else "forkserver"
    return multiprocessing.get_context(method)


class _Workers:
    """A process pool whose start does not hold up the caller. Forked workers start at once (the first
    task is submitted from this thread, before any other thread exists); forkserver workers block the
    caller until the server has imported numpy, scipy and pyarrow (a second or more), so they are started
    on a thread of their own while this process analyses files. `up` tells when a worker has answered."""

    def __init__(self, n: int) -> None:
        ctx = _context()
        self.forked = ctx.get_start_method() == "fork"
        if not self.forked:
            ctx.set_forkserver_preload([__name__])  # this module: it holds the workers' task
        else:
            # the objects alive now (the imported libraries, some 100,000) are left out of the garbage
            # collector's passes until the pool closes: a full pass over them in this process, set off by
            # the results coming in, cost some 60 ms while the workers waited for their next chunk, and one
            # in a worker would copy every page it shares with this process
            gc.freeze()
        try:
            self.pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_quiet_worker)
            self._up = threading.Event()
            # with fork, submitting forks every worker now, from this thread
            first = self.pool.submit(_worker_ready) if self.forked else None
            self._starter = threading.Thread(
                target=self._start, args=(first,), name="analyze-workers", daemon=True
            )
            self._starter.start()
        except BaseException:
            if self.forked:  # no pool to close: the objects go back to the collector now
                gc.unfreeze()
            raise

    def _start(self, first: Future[bool] | None) -> None:
        with contextlib.suppress(Exception):  # workers that fail to start leave the work to this process
            (first or self.pool.submit(_worker_ready)).result()
            self._up.set()

    @property
    def up(self) -> bool:
        return self._up.is_set()

    def wait_up(self, timeout: float) -> None:
        """Wait up to timeout for a forked worker's answer (forkserver workers are not waited for)."""
        if self.forked:
            self._up.wait(timeout)

    def close(self) -> None:
        """Shut the pool down once its workers have started (a worker abandoned while it starts would fail
        noisily after this process is gone)."""
        self._starter.join()
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.forked:
            gc.unfreeze()


def _chunks(files: Sequence[Path], workers: int) -> list[Sequence[Path]]:
    """The files in consecutive chunks of decreasing size (see CHUNK_SHARE): 1,000 files on 2 workers go
    out as 61 chunks, twenty of 32 files first and single files last."""
    out: list[Sequence[Path]] = []
    i = 0
    while i < len(files):
        size = max(1, min(MAX_CHUNK, (len(files) - i) // (CHUNK_SHARE * workers)))
        out.append(files[i : i + size])
        i += size
    return out


def _outcomes(files: Sequence[Path], workers: int, keep: bool, encode: bool) -> Iterator[Outcome]:
    """Each file's outcome, in file order. With workers > 1 the files go out in chunks (_chunks) to that
    many processes; until the first of them answers, this
    process analyses the chunks itself, so the workers' start costs no time unless the folder takes less than
    it (forked workers answer at once and are waited for)."""
    if workers <= 1 or len(files) < 2:
        for path in files:
            yield _analyse_one(path, keep)  # encoded ahead only where the cost is spread over workers
        return
    chunks = _chunks(files, workers)
    pool = _Workers(min(workers, len(chunks)))  # a process with no chunk to take would only cost its start
    futures: dict[int, Future[list[Outcome]]] = {}
    try:
        pool.wait_up(FORK_START_WAIT_S)
        for k, chunk in enumerate(chunks):
            if not futures and pool.up:
                futures = {
                    j: pool.pool.submit(_analyse_chunk, chunks[j], keep, encode)
                    for j in range(k, len(chunks))
                }
            fut = futures.get(k)
            yield from (fut.result() if fut is not None else _analyse_chunk(chunk, keep, encode))
    finally:
        pool.close()


def _strip_path(message: str, path: Path) -> str:
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message
