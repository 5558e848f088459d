"""Publishing: report files, the GitHub comment, the commit status, workflow commands."""
