"""Build the project's own demo datasets (text, rubrics and labels written for rubrictools).

Each submission is assembled from short fragments whose presence is the ground truth;
simulated human raters label it with a per-rater error rate, and a *simulated* judge (not
an LLM: a noisy copy of the truth with its own biases) supplies recorded verdicts. The
point is to give the charts and widgets something realistic to show offline.

    python datasets/make_demo.py     # re-creates datasets/demo/*
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent / "demo"
SEED = 20261122


def _write(
    name: str, submissions: pl.DataFrame, human: pl.DataFrame, verdicts: pl.DataFrame, rubric: list | None, card: dict
) -> None:
    d = HERE / name
    d.mkdir(parents=True, exist_ok=True)
    submissions.write_parquet(d / "submissions.parquet")
    human.write_parquet(d / "human.parquet")
    verdicts.write_parquet(d / "verdicts.parquet")
    if rubric is not None:
        (d / "rubric.json").write_text(json.dumps(rubric, indent=1) + "\n")
    (d / "CARD.json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"{name}: {submissions.height} submissions, {human.height} human labels, {verdicts.height} verdicts")


def _flip(rng: np.random.Generator, truth: bool, p: float) -> bool:
    return (not truth) if rng.random() < p else truth


# ----------------------------------------------------------------------------- support (binary)
SUPPORT_RUBRIC = [
    {"name": "answers_question", "weight": 10, "requirement": "Directly answers the customer's question"},
    {"name": "gives_steps", "weight": 5, "requirement": "Gives concrete steps the customer can follow"},
    {"name": "polite", "weight": 3, "requirement": "Is courteous and acknowledges the customer's situation"},
    {"name": "cites_policy", "weight": 4, "requirement": "Refers to the relevant policy or help page"},
    {
        "name": "overpromises",
        "weight": -6,
        "requirement": "Promises something support cannot guarantee (dates, refunds, exceptions)",
    },
]
TOPICS = {
    "password": ("How do I reset my password?", "You can reset it from the sign-in page with 'Forgot password'.",
                 "1) Open the sign-in page. 2) Choose 'Forgot password'. 3) Follow the link we email you within a few minutes.",
                 "Our account security guide (Help > Security) explains the reset rules.",
                 "I will make sure you never have to reset it again."),
    "refund": ("Can I get a refund for last month?", "Yes, charges from the last 30 days can be refunded.",
               "Go to Billing > History, pick the charge and press 'Request refund'.",
               "This follows our 30-day refund policy on the Billing help page.",
               "I guarantee the money will be back on your card tomorrow."),
    "shipping": ("Where is my order?", "Your order has left the warehouse and is with the courier.",
                 "Use the tracking number in your confirmation email on the courier's site to follow it.",
                 "Delivery times are listed in our Shipping policy.",
                 "It will definitely arrive before the weekend, I promise."),
    "export": ("How can I export my data?", "You can export everything as a CSV or JSON archive.",
               "Settings > Privacy > 'Download my data', then wait for the email with the archive.",
               "The Privacy policy describes what the export contains.",
               "I will personally send you the file today."),
}  # fmt: skip
POLITE = ("Thanks for reaching out, and sorry for the trouble.", "Happy to help with this!")
VAGUE = ("Please check the website for more information.", "This depends on several factors.")


def support(rng: np.random.Generator) -> None:
    rows, truth_rows = [], []
    topics = list(TOPICS)
    for i in range(80):
        topic = topics[i % len(topics)]
        q, answer, steps, policy, promise = TOPICS[topic]
        has = {
            "answers_question": rng.random() < 0.7,
            "gives_steps": rng.random() < 0.55,
            "polite": rng.random() < 0.6,
            "cites_policy": rng.random() < 0.35,
            "overpromises": rng.random() < 0.2,
        }
        parts = []
        if has["polite"]:
            parts.append(POLITE[int(rng.integers(0, 2))])
        parts.append(answer if has["answers_question"] else VAGUE[int(rng.integers(0, 2))])
        if has["gives_steps"]:
            parts.append(steps)
        if has["cites_policy"]:
            parts.append(policy)
        if has["overpromises"]:
            parts.append(promise)
        rows.append({"id": f"t{i:03d}", "topic": topic, "query": q, "submission": " ".join(parts)})
        truth_rows.append(has)
    subs = pl.DataFrame(rows)
    human, verdicts = [], []
    raters = {"ana": 0.05, "ben": 0.10, "chloe": 0.08}
    for i, has in enumerate(truth_rows):
        sid = f"t{i:03d}"
        who = list(raters) if i < 30 else [list(raters)[i % 3]]  # 3 raters on the first 30 items
        for c, t in has.items():
            for r in who:
                # ben is lenient on politeness; everyone finds over-promising a bit ambiguous
                p = raters[r] + (0.15 if (r == "ben" and c == "polite") else 0) + (0.05 if c == "overpromises" else 0)
                human.append({"id": sid, "criterion": c, "rater": r, "label": "MET" if _flip(rng, t, p) else "UNMET"})
            # the simulated judge: too generous on 'answers_question', misses some over-promises
            jp = {
                "answers_question": 0.05,
                "gives_steps": 0.06,
                "polite": 0.1,
                "cites_policy": 0.12,
                "overpromises": 0.15,
            }[c]
            j = _flip(rng, t, jp)
            if c == "answers_question" and not t and rng.random() < 0.3:
                j = True
            verdicts.append({"id": sid, "criterion": c, "verdict": "MET" if j else "UNMET",
                             "explanation": "simulated: a noisy copy of the true label, not a reading of this answer",
                             "judge": "simulated-judge"})  # fmt: skip
    _write("support", subs, pl.DataFrame(human), pl.DataFrame(verdicts), SUPPORT_RUBRIC, {
        "name": "demo_support",
        "title": "Customer-support answers graded on 4 binary criteria and 1 penalty",
        "origin": "written for rubrictools by datasets/make_demo.py (synthetic; fragments assembled at random)",
        "licence": "MIT (same as rubrictools)",
        "citation": "rubrictools demo data",
        "contents": "80 answers to 4 kinds of support question. Human labels: 3 raters (ana, ben, chloe) on t000-t029, one rater on the rest. verdicts: a SIMULATED judge (a noisy copy of the truth with a leniency bias on answers_question), not an LLM.",
        "labels": "MET / UNMET per criterion; overpromises is a penalty (weight -6)",
    })  # fmt: skip


# ----------------------------------------------------------------------------- essays (ordinal)
ESSAY_RUBRIC = [
    {"name": "thesis", "weight": 10, "requirement": "States a clear position on why cities should plant trees", "scale": "ordinal",
     "options": [{"label": "missing", "value": 0}, {"label": "weak", "value": 0.4}, {"label": "clear", "value": 0.8}, {"label": "compelling", "value": 1}]},
    {"name": "evidence", "weight": 8, "requirement": "Supports the position with concrete evidence", "scale": "ordinal",
     "options": [{"label": "none", "value": 0}, {"label": "some", "value": 0.5}, {"label": "strong", "value": 1}]},
    {"name": "organisation", "weight": 5, "requirement": "Is organised into a logical sequence", "scale": "ordinal",
     "options": [{"label": "poor", "value": 0}, {"label": "fair", "value": 0.5}, {"label": "good", "value": 1}]},
    {"name": "tone", "weight": 2, "requirement": "Tone of the essay", "scale": "nominal",
     "options": [{"label": "persuasive", "value": 1}, {"label": "neutral", "value": 0.5}, {"label": "informal", "value": 0.5},
                 {"label": "not applicable", "value": 0, "na": True}]},
]  # fmt: skip
THESIS = ("Trees are nice.", "Cities could maybe plant some trees.", "Cities should plant more trees because they make streets healthier.",
          "Every city should treat trees as infrastructure: they cool streets, clean air and pay for themselves.")  # fmt: skip
EVIDENCE = ("", "Shade makes summer walks more pleasant.",
            "Street trees can lower surface temperatures by several degrees and absorb rain that would flood drains.")  # fmt: skip
ORDER = ("poor", "fair", "good")
TONES = {
    "persuasive": "We cannot afford to wait.",
    "neutral": "These are some of the considerations.",
    "informal": "Honestly, trees are just cool.",
}


def essays(rng: np.random.Generator) -> None:
    rows, truth = [], []
    for i in range(60):
        q = rng.random()
        th = int(np.clip(np.round(q * 3 + rng.normal(0, 0.6)), 0, 3))
        ev = int(np.clip(np.round(q * 2 + rng.normal(0, 0.5)), 0, 2))
        org = int(np.clip(np.round(q * 2 + rng.normal(0, 0.7)), 0, 2))
        tone = ("persuasive", "neutral", "informal")[int(rng.integers(0, 3))]
        parts = [THESIS[th], EVIDENCE[ev], TONES[tone]]
        if org == 0:
            parts = parts[::-1]
        elif org == 1:
            parts = [parts[1], parts[0], parts[2]]
        rows.append({"id": f"e{i:03d}", "submission": " ".join(p for p in parts if p)})
        truth.append({"thesis": th, "evidence": ev, "organisation": org, "tone": tone})
    labels = {c["name"]: [o["label"] for o in c["options"] if not o.get("na")] for c in ESSAY_RUBRIC}
    human, verdicts = [], []
    for i, t in enumerate(truth):
        sid = f"e{i:03d}"
        for c in ("thesis", "evidence", "organisation"):
            k = len(labels[c])
            for r, sd in (("dana", 0.45), ("eli", 0.6)):
                lab = int(np.clip(np.round(t[c] + rng.normal(0, sd)), 0, k - 1))
                human.append({"id": sid, "criterion": c, "rater": r, "label": labels[c][lab]})
            # simulated judge: one level too generous now and then
            j = int(np.clip(t[c] + (rng.random() < 0.25) - (rng.random() < 0.08), 0, k - 1))
            verdicts.append(
                {
                    "id": sid,
                    "criterion": c,
                    "verdict": labels[c][j],
                    "explanation": "simulated judge",
                    "judge": "simulated-judge",
                }
            )
        for r in ("dana", "eli"):
            lab = t["tone"] if rng.random() > 0.15 else ("not applicable" if rng.random() < 0.5 else "neutral")
            human.append({"id": sid, "criterion": "tone", "rater": r, "label": lab})
        jt = t["tone"] if rng.random() > 0.2 else "neutral"
        verdicts.append(
            {
                "id": sid,
                "criterion": "tone",
                "verdict": jt,
                "explanation": "simulated judge",
                "judge": "simulated-judge",
            }
        )
    _write("essays", pl.DataFrame(rows), pl.DataFrame(human), pl.DataFrame(verdicts), ESSAY_RUBRIC, {
        "name": "demo_essays",
        "title": "Short persuasive essays graded on ordinal multi-choice criteria and a nominal one with an NA option",
        "origin": "written for rubrictools by datasets/make_demo.py (synthetic)",
        "licence": "MIT (same as rubrictools)",
        "citation": "rubrictools demo data",
        "contents": "60 essays on 'Why should cities plant trees?'. Two raters (dana, eli) label every essay. verdicts: a SIMULATED judge that is sometimes one level too generous, not an LLM.",
        "labels": "thesis missing<weak<clear<compelling; evidence none<some<strong; organisation poor<fair<good; tone persuasive/neutral/informal or 'not applicable' (NA)",
    })  # fmt: skip


# ----------------------------------------------------------------------------- code review (penalties, per-item rubrics)
BUGS = [
    (
        "off-by-one in the loop bound",
        "The loop runs to len(items) inclusive, so the last iteration reads past the end.",
    ),
    ("missing null check", "user can be None here when the session expired; this will raise."),
    ("SQL built by string formatting", "The query concatenates user input; use parameters to avoid injection."),
    ("resource leak", "The file handle is never closed on the error path; use a with block."),
    ("race on the shared counter", "Two workers increment counter without a lock, so updates can be lost."),
]
RUDE = "Honestly this is sloppy work, did you even run it?"
UNRELATED = "While you are here, rewrite the whole module in a functional style."
TEST = "Please add a unit test that covers this case."


def code_review(rng: np.random.Generator) -> None:
    rows, human, verdicts = [], [], []
    for i in range(50):
        b = i % len(BUGS)
        name, remark = BUGS[b]
        rubric = [
            {"name": "finds_bug", "weight": 10, "requirement": f"Points out the {name}"},
            {"name": "suggests_test", "weight": 4, "requirement": "Asks for a test that would catch the problem"},
            {"name": "rude", "weight": -8, "requirement": "Is dismissive or insulting to the author"},
            {
                "name": "unrelated_refactor",
                "weight": -3,
                "requirement": "Demands changes unrelated to the pull request",
            },
        ]
        has = {
            "finds_bug": rng.random() < 0.65,
            "suggests_test": rng.random() < 0.4,
            "rude": rng.random() < 0.15,
            "unrelated_refactor": rng.random() < 0.2,
        }
        parts = [remark if has["finds_bug"] else "Looks fine to me overall."]
        if has["suggests_test"]:
            parts.append(TEST)
        if has["rude"]:
            parts.append(RUDE)
        if has["unrelated_refactor"]:
            parts.append(UNRELATED)
        sid = f"r{i:03d}"
        rows.append(
            {
                "id": sid,
                "pull_request": f"PR about the {name}",
                "submission": " ".join(parts),
                "rubric": json.dumps(rubric),
            }
        )
        for c, t in has.items():
            for r in ("fay", "gus") if i % 2 == 0 else ("fay",):
                human.append(
                    {"id": sid, "criterion": c, "rater": r, "label": "MET" if _flip(rng, t, 0.06) else "UNMET"}
                )
            verdicts.append({"id": sid, "criterion": c, "verdict": "MET" if _flip(rng, t, 0.1) else "UNMET",
                             "explanation": "simulated judge", "judge": "simulated-judge",
                             "weight": float(next(x["weight"] for x in rubric if x["name"] == c))})  # fmt: skip
    _write("code_review", pl.DataFrame(rows), pl.DataFrame(human), pl.DataFrame(verdicts), None, {
        "name": "demo_code_review",
        "title": "Code-review comments with per-item rubrics and negative-weight penalties",
        "origin": "written for rubrictools by datasets/make_demo.py (synthetic)",
        "licence": "MIT (same as rubrictools)",
        "citation": "rubrictools demo data",
        "contents": "50 review comments, each on a pull request with its own bug; every item carries its own rubric (JSON in the 'rubric' column). Raters fay (all) and gus (even items). verdicts: a SIMULATED judge, not an LLM; they carry the item's weights so rt.score works without a shared rubric.",
        "labels": "MET / UNMET; rude (-8) and unrelated_refactor (-3) are penalties",
    })  # fmt: skip


if __name__ == "__main__":
    rng = np.random.default_rng(SEED)
    support(rng)
    essays(rng)
    code_review(rng)
