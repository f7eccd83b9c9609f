"""Reproduction of published figures: each paper on a public trace is a `Profile` of the figures
it published, computed from the catalog under the paper's own definition and shown beside the
published value (`ddlx reproduce PROFILE`)."""

from ddlx.analysis.reproduce.model import (
    DIFFERS,
    EXACT,
    MATCHES,
    NOT_HERE,
    NOT_YET,
    PUBLISHED,
    RELEASE_COUNT,
    SOURCE_KINDS,
    SYNTHETIC,
    FigureResult,
    Finding,
    NotComputable,
    Profile,
    PublishedFigure,
    Reproduction,
    Tolerance,
    require_jobs,
    require_tables,
    rounded,
    within,
)
from ddlx.analysis.reproduce.run import get_profile, profiles, profiles_for, reproduce, reproduce_on

__all__ = [
    "DIFFERS", "EXACT", "MATCHES", "NOT_HERE", "NOT_YET", "PUBLISHED", "RELEASE_COUNT", "SOURCE_KINDS", "SYNTHETIC",
    "FigureResult", "Finding", "NotComputable", "Profile",
    "PublishedFigure", "Reproduction", "Tolerance", "get_profile", "profiles", "profiles_for", "reproduce",
    "reproduce_on", "require_jobs", "require_tables", "rounded", "within",
]
