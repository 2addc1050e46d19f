"""The loopback fake server lives in :mod:`rubrictools.testing` (users test their own pipelines
with it too); the test suite imports it from here."""

from rubrictools.testing import (  # noqa: F401
    FakeLLMServer,
    Reply,
    criterion_name,
    default_script,
    fake_logprobs,
    submission_text,
    user_text,
)


def judge_from(kw: dict, *, api_base: str, api_key: str, **defaults) -> dict:
    """``kw`` (grading keywords) with a string ``model`` turned into the ``rt.Judge`` that holds
    the judge's settings: ``api_base``, ``api_key``, ``defaults`` and any judge setting in ``kw``
    (``max_concurrency=``, ``timeout=``...), which the grading functions no longer take."""
    import rubrictools as rt
    from rubrictools.grading.options import JUDGE_SETTINGS

    settings = {**defaults, **{k: kw.pop(k) for k in JUDGE_SETTINGS if k in kw}}
    model = kw.get("model")
    if isinstance(model, str) and model != "rubrictools/scripted":
        kw["model"] = rt.Judge(model=model, **{"api_base": api_base, "api_key": api_key, **settings})
    return kw
