"""The ladder's contract: what a domain brings to the compile and probe loops (`contract`), the rules
that turn a family's verdicts into its outcome and reasoning gap (`outcomes`), and a run split by
family into shards (`shards`). It sits below the loops, the domains and the report: each of them
imports it, and it imports none of them."""

from .contract import Attempt, Checked, CompileDomain, Domain, Job, ProbeConfig, Settings
from .outcomes import FamilyResults, Gap, Outcome, classify, milestone_test, parent_outcome
from .shards import WHOLE, Shard

__all__ = ["Attempt", "Checked", "CompileDomain", "Domain", "FamilyResults", "Gap", "Job", "Outcome", "ProbeConfig",
           "Settings", "Shard", "WHOLE", "classify", "milestone_test", "parent_outcome"]
