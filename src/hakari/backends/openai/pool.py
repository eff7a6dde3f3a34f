"""Replicas sharing one queue of requests: bounded concurrency, retries, failover.

Each replica runs `concurrency` workers that take jobs from one shared queue, so a fast
replica takes more work and a slow one less. A retryable failure puts the job back on
the queue after its backoff (any replica may take it); a replica whose attempts fail
`replica_failures` times in a row is taken out while another one is still in, and its
jobs go to the others. A job that fails `max_attempts` times or for longer than
`max_retry_time`, a failure no retry can fix, or the last replica going out, stops the
run with one `ServerError` line (except an answer without text, `NoContent`: its
refusals stand once the retries run out); every result handed to `on_result` before that is
already in the cache, so the same command resumes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from hakari.backends.openai.faults import NoContent, ServerError, backoff, classify
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError

log = logging.getLogger(__name__)

J = TypeVar("J")
R = TypeVar("R")
C = TypeVar("C")


@dataclass
class Replica(Generic[C]):
    url: str
    client: C
    failures_in_a_row: int = 0
    out: bool = False
    answered: int = 0


@dataclass
class _Attempt(Generic[J]):
    job: J
    attempts: int = 0
    first_try: float = field(default_factory=time.monotonic)


class ReplicaPool(Generic[C]):
    def __init__(
        self,
        replicas: Sequence[Replica[C]],
        options: ServingOptions,
        describe_fatal: Callable[[BaseException, Replica[C]], str],
        redact: Callable[[str], str],
        rng: random.Random | None = None,
    ) -> None:
        self.replicas = list(replicas)
        self.options = options
        self.describe_fatal = describe_fatal
        self.redact = redact
        self.rng = rng or random.Random()
        self.retries = 0  # attempts that failed and were retried, over the pool's life
        self.refused_requests = 0  # requests settled with refusals (NoContent to the end)

    def live(self) -> list[Replica[C]]:
        return [r for r in self.replicas if not r.out]

    async def run(
        self,
        jobs: Sequence[J],
        call: Callable[[Replica[C], J], Awaitable[R]],
        on_result: Callable[[J, R], None],
    ) -> None:
        """Run every job once successfully; `on_result` as each one finishes."""
        if not jobs:
            return
        queue: asyncio.Queue[_Attempt[J]] = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(_Attempt(job))
        remaining = len(jobs)
        all_done = asyncio.get_running_loop().create_future()
        timers: list[asyncio.TimerHandle] = []

        def finish(error: BaseException | None = None) -> None:
            if not all_done.done():
                if error is None:
                    all_done.set_result(None)
                else:
                    all_done.set_exception(error)

        async def worker(replica: Replica[C]) -> None:
            nonlocal remaining
            while not replica.out and not all_done.done():
                item = await queue.get()
                if replica.out:  # taken out while waiting: leave the job to the others
                    queue.put_nowait(item)
                    return
                item.attempts += 1
                try:
                    result = await call(replica, item.job)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if not self._failed(replica, item, exc, queue, timers, finish):
                        continue
                    assert isinstance(exc, NoContent)
                    result = cast(R, exc.settled)  # retries ran out: the refusals stand
                replica.failures_in_a_row = 0
                replica.answered += 1
                try:
                    on_result(item.job, result)
                except BaseException as exc:
                    finish(exc)
                    return
                remaining -= 1
                if remaining == 0:
                    finish()

        workers = [
            asyncio.create_task(worker(r))
            for r in self.live()
            for _ in range(self.options.concurrency)
        ]
        try:
            await all_done
        finally:
            for timer in timers:
                timer.cancel()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _failed(
        self,
        replica: Replica[C],
        item: _Attempt[J],
        exc: Exception,
        queue: asyncio.Queue[_Attempt[J]],
        timers: list[asyncio.TimerHandle],
        finish: Callable[[BaseException | None], None],
    ) -> bool:
        """Retry the job later, or stop the run; True when the job is settled instead: a
        `NoContent` whose retries ran out (its `settled` results are the answer)."""
        fault = classify(exc)
        if isinstance(exc, HakariInputError):
            finish(exc)  # already one clear line
            return False
        if fault is None:
            finish(ServerError(self.redact(self.describe_fatal(exc, replica))))
            return False
        opts = self.options
        if not isinstance(exc, NoContent):  # the replica answered: no sign it is unwell
            replica.failures_in_a_row += 1
        if replica.failures_in_a_row >= opts.replica_failures and len(self.live()) > 1:
            replica.out = True
            log.warning(
                "replica %s failed %d times in a row (%s): taken out, %d left",
                replica.url,
                replica.failures_in_a_row,
                fault.reason,
                len(self.live()),
            )
        elif replica.failures_in_a_row >= opts.replica_failures * 4 and not any(
            r.failures_in_a_row < opts.replica_failures for r in self.live()
        ):
            finish(
                ServerError(
                    self.redact(
                        f"every replica keeps failing (last: {replica.url}: {fault.reason})"
                    )
                )
            )
            return False
        waited = time.monotonic() - item.first_try
        delay = max(
            fault.retry_after, backoff(item.attempts, opts.backoff_base, opts.backoff_cap, self.rng)
        )
        if item.attempts >= opts.max_attempts or waited + delay > opts.max_retry_time:
            if isinstance(exc, NoContent):
                self.refused_requests += 1
                log.warning(
                    "%s: no text after %d attempts (%s): counted as refused",
                    replica.url,
                    item.attempts,
                    fault.reason,
                )
                return True
            finish(
                ServerError(
                    self.redact(
                        f"{replica.url}: gave up on a request after {item.attempts} attempts in "
                        f"{waited:.0f} s (last: {fault.reason})"
                    )
                )
            )
            return False
        self.retries += 1
        log.info("%s: %s; retry %d in %.2f s", replica.url, fault.reason, item.attempts, delay)
        loop = asyncio.get_running_loop()
        timers.append(loop.call_later(delay, queue.put_nowait, item))
        return False
