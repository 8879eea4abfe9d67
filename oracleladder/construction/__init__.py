"""Building a diagnostic set from a problem pool: anchor screen, structural filter, funnel, re-anchoring."""
