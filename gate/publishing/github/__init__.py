"""GitHub's REST API: the client, the sticky comment."""
