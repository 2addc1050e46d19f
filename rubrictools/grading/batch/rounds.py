"""Provider batches of a job: upload request files and create batches, idempotently.

A round is recorded in the handle after its file is uploaded and before its batch is created,
so an interrupted submission is resumed by adopting the batch made from that file (found in
the provider's batch list), never by paying twice.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from rubrictools.grading.batch.files import ENDPOINT, MAX_BYTES, MAX_REQUESTS
from rubrictools.grading.plan import Plan
from rubrictools.judge import Judge, ResponseCache
from rubrictools.judge.batch_api import batch_call
from rubrictools.judge.pricing import batch_prices
from rubrictools.judge.providers import load_litellm
from rubrictools.judge.transport import chat_body

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.grading.batch.job import BatchJob

__all__ = ["check_cost", "create_round", "find_batch", "resume_creating", "submit_rounds"]


def submit_rounds(
    job: BatchJob,
    plan: Plan,
    store: ResponseCache,
    *,
    max_requests: int = MAX_REQUESTS,
    max_bytes: int = MAX_BYTES,
    max_cost_usd: float | None = None,
    skip: set[str] | None = None,
) -> None:
    """Upload and create provider batches for every request not answered yet and not in
    ``skip`` (one set per judge)."""
    answered = set(store.get_many(c.key for c in plan.calls if c.key is not None))
    lit = load_litellm()
    for ji, judge in enumerate(plan.judges):
        if not isinstance(judge, Judge):
            raise ValueError("batch grading sends requests to a provider; a ScriptedJudge cannot be submitted")
        lines: dict[str, bytes] = {}
        for c in plan.calls:
            if c.judge_i != ji or c.key in answered or c.key in lines or (skip and c.key in skip):
                continue
            body = chat_body(judge, c.messages, c.output, c.extra, max_tokens=c.max_tokens)
            line = {"custom_id": c.key, "method": "POST", "url": ENDPOINT, "body": body}
            lines[c.key] = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()  # type: ignore[index]  # keys are assigned before submission
        if not lines:
            continue
        if max_cost_usd is not None:
            check_cost(judge, plan, set(lines), max_cost_usd)
        chunks: list[list[bytes]] = [[]]
        size = 0
        for blob in lines.values():
            if chunks[-1] and (len(chunks[-1]) >= max_requests or size + len(blob) > max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append(blob)
            size += len(blob)
        for chunk in chunks:
            k = len(job.rounds)
            name = f"requests-{k:05d}.jsonl"
            data = b"".join(chunk)
            (job.path / name).write_bytes(data)
            f = batch_call(judge, job.api_key, f"upload {name}", lit.create_file, file=(name, data), purpose="batch")
            # recorded before the batch exists: a crash from here on is resumed by adopting the
            # batch made from this file, if the provider has one, instead of paying twice
            job.rounds.append(
                {
                    "batch_id": None,
                    "input_file_id": f.id,
                    "judge": judge.label,
                    "model": judge.model,
                    "requests": len(chunk),
                    "requests_file": name,
                    "status": "creating",
                    "completed": 0,
                    "failed": 0,
                    "output_file_id": None,
                    "error_file_id": None,
                    "created": time.time(),
                }
            )
            job.save()
            create_round(job, job.rounds[-1], judge)


def find_batch(job: BatchJob, judge: Judge, input_file_id: str) -> Any:
    """The provider's batch made from ``input_file_id`` among its most recent ones, or None."""
    page = batch_call(judge, job.api_key, "list batches", load_litellm().list_batches, limit=100)
    for b in getattr(page, "data", None) or []:
        fid = getattr(b, "input_file_id", None) if not isinstance(b, dict) else b.get("input_file_id")
        if fid == input_file_id:
            return b
    return None


def create_round(job: BatchJob, r: dict[str, Any], judge: Judge) -> None:
    """Create the batch of a recorded round, idempotently: before every attempt but a fresh
    round's first, look for a batch already made from the round's file (a create whose answer
    was lost, or a crash before the handle was saved) and adopt it."""
    tries = 0

    def create_or_adopt(**credentials: Any) -> Any:
        nonlocal tries
        tries += 1
        if tries > 1 or r.get("status") == "creating-retry":
            found = find_batch(job, judge, r["input_file_id"])
            if found is not None:
                return found
        return load_litellm().create_batch(
            completion_window="24h",
            endpoint=ENDPOINT,
            input_file_id=r["input_file_id"],
            metadata={"rubrictools_job": job.handle["digest"][:16], "part": r["requests_file"]},
            **credentials,
        )

    try:
        b = batch_call(judge, job.api_key, f"create batch from {r['input_file_id']}", create_or_adopt)
    except RuntimeError:
        r["status"] = "creating-retry"  # the next resume looks for the batch first
        job.save()
        raise
    status = getattr(b, "status", None) if not isinstance(b, dict) else b.get("status")
    r.update(batch_id=getattr(b, "id", None) if not isinstance(b, dict) else b.get("id"), status=status)
    job.save()


def resume_creating(job: BatchJob) -> None:
    """Finish rounds left between upload and batch creation by an interrupted submission."""
    for r in job.rounds:
        if r["status"] in ("creating", "creating-retry"):
            r["status"] = "creating-retry"
            create_round(job, r, job.judge(r["judge"]))


def check_cost(judge: Judge, plan: Plan, keys: set[str], max_cost_usd: float) -> None:
    """Refuse to submit when the most these requests can cost (prompt tokens plus
    ``max_tokens`` per request, at batch prices) exceeds ``max_cost_usd``."""
    prices = batch_prices(judge.model)
    if prices is None:
        raise ValueError(f"max_cost_usd cannot be enforced: litellm has no price for model {judge.model!r}")
    seen: set[str] = set()
    prompt = answer = 0
    for c in plan.calls:
        if c.key in keys and c.key not in seen:
            if c.max_tokens is None:
                raise ValueError("max_cost_usd in batch mode needs a max_tokens cap to bound each answer's cost")
            seen.add(c.key)
            prompt += load_litellm().token_counter(model=judge.model, messages=c.messages)
            answer += c.max_tokens
    bound = prompt * prices[0] + answer * prices[1]
    if bound > max_cost_usd:
        raise ValueError(
            f"batch for {judge.label} could cost up to ${bound:,.2f} ({len(seen)} requests, {prompt:,} prompt tokens, "
            f"{answer:,} answer tokens at most) > max_cost_usd=${max_cost_usd:,.2f}; nothing was submitted"
        )
