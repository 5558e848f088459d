"""What every stage uses: errors that name their place, atomic writes, size limits."""
