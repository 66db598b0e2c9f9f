"""The session features a loop service composes, in order (a feature may find the ones before it).

A new feature is its own package with a ``SessionFeature`` (services/loop/core/feature.py) plus
one line here."""

from __future__ import annotations

from services.loop.checkpoints.feature import CheckpointsFeature
from services.loop.compaction.feature import CompactionFeature
from services.loop.core.feature import FeatureFactory
from services.loop.harvest.feature import HarvestFeature
from services.loop.hooks.feature import HooksFeature
from services.loop.jobs.feature import JobsFeature
from services.loop.network.feature import NetworkFeature
from services.loop.plans.feature import PlansFeature
from services.loop.skills.feature import SkillsFeature
from services.loop.subagents.feature import SubagentsFeature
from services.loop.tracing.feature import TracingFeature

FEATURES: tuple[FeatureFactory, ...] = (
    CompactionFeature,
    SkillsFeature,
    TracingFeature,
    SubagentsFeature,
    HooksFeature,
    PlansFeature,
    HarvestFeature,
    CheckpointsFeature,
    JobsFeature,
    NetworkFeature,
)
