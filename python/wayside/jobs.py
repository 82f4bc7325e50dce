"""Fanning independent jobs (simulation runs) out to workers: in this
process, on local worker processes, or on a Dask cluster
(`dask://HOST:PORT`), yielding each answer as it finishes. Used by
`wayside validate` and `wayside sweep`."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

ProgressFn = Callable[[int, int], None]
EXECUTORS = "local, or dask://HOST:PORT (a running Dask scheduler)"


class ExecutorError(ValueError):
    """An executor that cannot be used (bad specification, unreachable cluster)."""


def check_executor(spec: str) -> str:
    """Validates an executor specification; returns it normalised."""
    if spec == "local":
        return spec
    if spec.startswith("dask://"):
        hostport = spec[len("dask://"):]
        host, _, port = hostport.rpartition(":")
        if host and port.isdigit() and 0 < int(port) < 65536:
            return spec
        raise ExecutorError(f"executor: '{spec}' has no HOST:PORT; e.g. dask://127.0.0.1:8786")
    raise ExecutorError(f"executor: '{spec}' is not known; allowed: {EXECUTORS}")


def run_jobs(
    fn: Callable[[T], R],
    items: Sequence[T],
    executor: str = "local",
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[tuple[int, R]]:
    """Calls `fn(item)` for every item and yields `(index, answer)` in the
    order the jobs finish. `fn` must be importable by name (a module-level
    function) so that worker processes can run it.

    `executor = "local"` uses `workers` spawned processes (default: the
    number of CPUs; 1 runs in this process); `"dask://HOST:PORT"` submits to
    that Dask scheduler (`workers` is then ignored: the cluster decides).
    `progress(done, total)` is called before the first job and after each."""
    spec = check_executor(executor)
    if progress:
        progress(0, len(items))
    if not items:
        return
    if spec == "local":
        answers = _local(fn, items, workers)
    else:
        answers = _dask(fn, items, spec[len("dask://"):])
    for done, (index, answer) in enumerate(answers, 1):
        if progress:
            progress(done, len(items))
        yield index, answer


def _local(fn: Callable[[T], R], items: Sequence[T], workers: int | None) -> Iterator[tuple[int, R]]:
    n = max(1, min(workers or os.cpu_count() or 1, len(items)))
    if n == 1:
        for i, item in enumerate(items):
            yield i, fn(item)
        return
    ctx = multiprocessing.get_context("spawn")  # the engine may hold threads: no fork
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for f in as_completed(futures):
                yield futures[f], f.result()
        except BrokenProcessPool as e:
            raise ExecutorError(f"a local worker process died ({e}); its job was lost") from None
        finally:
            pool.shutdown(cancel_futures=True)


def _dask(fn: Callable[[T], R], items: Sequence[T], address: str) -> Iterator[tuple[int, R]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover - a dependency of the package
        raise ExecutorError("executor dask://: the 'distributed' package is not installed (pip install 'dask[distributed]')") from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise ExecutorError(f"executor dask://{address}: no Dask scheduler answers there ({e})") from None
    try:
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for f in dask_completed(futures):
            try:
                answer = f.result()
            except (KilledWorker, CommClosedError) as e:
                raise ExecutorError(f"executor dask://{address}: the cluster lost a job ({type(e).__name__}: {e})") from None
            yield index[f.key], answer
    finally:
        client.close()
