"""Comparing systems: preference tables -> win rates, leaderboards, position bias.

- :func:`win_rates`: every system against every opponent, cluster-bootstrap intervals (hard or
  soft preferences);
- :func:`length_controlled_win_rates`: AlpacaEval's length-controlled win rate against a baseline;
- :func:`rank_systems`: Bradley-Terry (or Elo) ratings with intervals and rank intervals;
- :func:`position_bias`: positional agreement and first-position win rate of a judge;
- :func:`preferences_from_scores` / :func:`preferences_from_verdicts`: a preference table
  from the rubric scores (or verdict tables) of several systems graded one at a time.
"""

from __future__ import annotations

from rubrictools.leaderboard.length_control import length_controlled_win_rates
from rubrictools.leaderboard.position import position_bias
from rubrictools.leaderboard.ranking import rank_systems
from rubrictools.leaderboard.table import check_preferences, preferences_from_scores, preferences_from_verdicts
from rubrictools.leaderboard.win_rates import win_rates

__all__ = [
    "check_preferences",
    "length_controlled_win_rates",
    "position_bias",
    "preferences_from_scores",
    "preferences_from_verdicts",
    "rank_systems",
    "win_rates",
]
