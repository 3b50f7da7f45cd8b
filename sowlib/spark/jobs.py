"""Running a Spark job from the driver while reporting its tasks to a ``progress=`` reporter.

Imports pyspark and ``sowlib.progress``; nothing else of sowlib.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import TypeVar

from pyspark import SparkContext

from sowlib.progress import Reporter

__all__ = ["POLL_SECONDS", "run_with_progress", "task_counts"]

T = TypeVar("T")

#: How often the driver reads Spark's status tracker while a job runs.
POLL_SECONDS = 0.2


def task_counts(sc: SparkContext, group: str) -> tuple[int, int]:
    """(completed, total) tasks of every stage of the jobs in job group ``group``."""
    tracker = sc.statusTracker()
    done = total = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is None:
            continue
        for stage in info.stageIds:
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None:
                done += stage_info.numCompletedTasks
                total += stage_info.numTasks
    return done, total


def run_with_progress(sc: SparkContext, action: Callable[[], T], rep: Reporter) -> T:
    """Run ``action`` (which starts Spark jobs) in a job group, reporting finished tasks.

    The action runs in a helper thread (Spark's pinned-thread mode gives it its own
    job group) while this thread polls the status tracker; the counts are tasks,
    and the total grows as Spark submits stages. Exceptions of the action are
    raised here.
    """
    group = f"sowlib-{uuid.uuid4().hex}"
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            sc.setJobGroup(group, "sowlib", interruptOnCancel=False)
            result.append(action())
        except BaseException as exc:  # handed to the calling thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="sowlib-spark-job", daemon=True)
    worker.start()
    while True:
        worker.join(POLL_SECONDS)
        done, total = task_counts(sc, group)
        if total:
            rep.set_total(max(total, rep.total or 0))
            rep.update(done)
        if not worker.is_alive():
            break
    if failure:
        raise failure[0]
    return result[0]
