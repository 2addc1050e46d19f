"""Several ``agrade`` calls on one event loop (an Inspect eval grades its samples so): they share
the direct transport's HTTP session and may share one budget; none may spoil another's run."""

from __future__ import annotations

import asyncio
import threading

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.budget import Budget
from rubrictools.testing import FakeLLMServer

MODEL = "openai/gpt-4.1-mini"
RUBRIC = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])


def judge(srv: FakeLLMServer) -> rt.Judge:
    return rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test-not-a-key", backoff_base=0.01)


def grade_in_thread(srv: FakeLLMServer, texts: list[str], done: threading.Event, **kw) -> list[pl.DataFrame]:
    """``agrade`` of each text at once on one loop in a thread; ``done`` is set as the first ends."""
    out: list[pl.DataFrame] = []

    async def one(text: str) -> pl.DataFrame:
        v = await rt.agrade(
            pl.DataFrame({"submission": [text]}),
            RUBRIC,
            model=judge(srv),
            progress=False,
            record=False,
            cache=False,
            **kw,
        )
        done.set()
        return v

    async def main() -> None:
        out.extend(await asyncio.gather(*(one(t) for t in texts)))

    worker = threading.Thread(target=asyncio.run, args=(main(),))
    worker.start()
    return out, worker


def test_a_run_that_ends_first_does_not_close_the_session_under_the_others():
    """Before the fix the first run to end closed the loop's session: the others' requests
    failed with 'Session is closed'."""
    with FakeLLMServer() as srv:
        srv.hold()
        first_done = threading.Event()
        out, worker = grade_in_thread(srv, ["one answer", "another answer", "a third answer"], first_done)
        assert srv.arrived(3).wait(60)
        srv.release(1)  # one run ends while the other two wait on their replies
        assert first_done.wait(60)
        srv.release()
        worker.join(60)
    assert len(out) == 3
    errors = pl.concat(out)["error"].drop_nulls().to_list()
    assert errors == [], errors


def test_one_budget_shared_by_concurrent_runs_is_never_passed():
    with FakeLLMServer() as srv:
        probe = rt.grade(
            pl.DataFrame({"submission": ["x"]}),
            RUBRIC,
            model=rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test", max_tokens=20),
            progress=False,
            record=False,
            cache=False,
        )
        cap = 6 * float(probe["cost_usd"][0])  # the worst case of one request is about 3.8 of them
        srv.reset()
        shared = Budget(cap)
        texts = [f"answer number {i}" for i in range(10)]

        async def main() -> list[pl.DataFrame]:
            j = rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test", max_tokens=20)
            return await asyncio.gather(
                *(
                    rt.agrade(
                        pl.DataFrame({"submission": [t]}),
                        RUBRIC,
                        model=j,
                        progress=False,
                        record=False,
                        cache=False,
                        max_cost_usd=shared,
                    )
                    for t in texts
                )
            )

        v = pl.concat(asyncio.run(main()))
    assert float(v["cost_usd"].sum()) <= cap and shared.spent == pytest.approx(float(v["cost_usd"].sum()))
    assert 1 <= srv.hits < len(texts)
    assert v.filter(pl.col("error").is_not_null())["error"].str.starts_with("budget exceeded").all()
