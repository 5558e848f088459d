"""The built-in demo: generated inputs, then the gate run on them, offline."""
