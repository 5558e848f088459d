"""The verdict: the policy's limits applied to what the earlier stages found."""
