"""Statistics over aligned per-query arrays."""
