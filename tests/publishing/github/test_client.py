"""GitHubClient, publish_comment and fit_comment against the fake GitHub (tests/publishing/github/fake_github.py).

Every wait is simulated: the client gets a fake sleep/clock/now, so retry
tests record the waits instead of sleeping.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import socket

import pytest

from gate.publishing.github.client import (
    DEFAULT_BOT_LOGIN,
    GitHubClient,
    GitHubError,
    GitHubNotFoundError,
    GitHubPermissionError,
    GitHubWaitCapError,
)
from gate.publishing.github.sticky_comment import CommentResult, comment_marker, parse_marker, publish_comment
from gate.rendering.markdown_cut import COMMENT_LIMIT, fit_comment
from tests.publishing.github.fake_github import FakeGitHub, _Spec
from tests.shared_data import GITHUB, need
from tests.support.loopback import close_listener, loopback_address

TOKEN = "ghs_TopSecretToken1234567890abcdef"
SHA1 = "1" * 40
SHA2 = "2" * 40
PR = 7
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"


class FakeTime:
    """sleep() advances the clocks instead of sleeping."""

    def __init__(self, start: float = 1_700_000_000.0):
        self.t = start
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    def clock(self) -> float:
        return self.t

    def now(self) -> float:
        return self.t


@pytest.fixture
def ftime() -> FakeTime:
    return FakeTime()


@pytest.fixture
def fake(ftime: FakeTime):
    server = FakeGitHub(token=TOKEN).start()
    server.now = ftime.now()
    server.add_pull(PR, SHA1, files=["a.yml"])
    try:
        yield server
    finally:
        server.stop()
    server.assert_valid()  # no request GitHub's OpenAPI description would reject


def make_client(fake: FakeGitHub, ftime: FakeTime, **kw) -> GitHubClient:
    return GitHubClient(fake.url, TOKEN, fake.repository, sleep=ftime.sleep, clock=ftime.clock, now=ftime.now, **kw)


@pytest.fixture
def client(fake: FakeGitHub, ftime: FakeTime) -> GitHubClient:
    return make_client(fake, ftime)


def ours(fake: FakeGitHub, number: int = PR) -> list[dict]:
    return [c for c in fake.comments(number) if parse_marker(c["body"])]


def publish(client, verdict="pass", body="Result body", head=SHA1, mode="update", suite="main"):
    return publish_comment(client, PR, suite, head, verdict, body, mode=mode)


# ------------------------------------------------------------------ headers, repr, token


def test_every_request_sends_auth_accept_and_api_version(client, fake):
    client.get_pull(PR)
    client.list_issue_comments(PR)
    client.create_comment(PR, "x")
    assert fake.requests
    for r in fake.requests:
        assert r.header("authorization") == f"Bearer {TOKEN}"
        assert r.header("accept") == "application/vnd.github+json"
        assert r.header("x-github-api-version") == "2022-11-28"
        assert r.header("user-agent", ).startswith("retrieval-gate/")


def test_token_never_in_repr_errors_or_logs(fake, ftime, caplog):
    caplog.set_level(logging.DEBUG)
    client = make_client(fake, ftime)
    assert TOKEN not in repr(client) and TOKEN not in str(client)
    # a server that echoes the token in its error message
    fake.script_error(PULL, 422, message=f"bad token {TOKEN}")
    with pytest.raises(GitHubError) as info:
        client.get_pull(PR)
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)
    assert TOKEN not in (info.value.api_message or "")
    assert "***" in str(info.value)
    # permission error and rate-limit path
    fake.script_integration_error(COMMENTS, method="POST")
    with pytest.raises(GitHubPermissionError) as info:
        client.create_comment(PR, "x")
    assert TOKEN not in str(info.value)
    fake.script_rate_limit(PULL, retry_after=1)
    client.get_pull(PR)
    # a connection error (nothing listens on the port)
    with socket.socket() as s:
        s.bind((loopback_address(), 0))
        host, port = s.getsockname()[:2]
    dead = GitHubClient(f"http://{host}:{port}", TOKEN, "o/r", sleep=ftime.sleep, clock=ftime.clock, now=ftime.now)
    with pytest.raises(GitHubError) as info:
        dead.get_pull(1)
    assert TOKEN not in str(info.value) and info.value.__cause__ is None
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(dead._auth)


def test_constructor_validates_inputs():
    with pytest.raises(ValueError):
        GitHubClient("https://api.github.com", "", "o/r")
    with pytest.raises(ValueError):
        GitHubClient("https://api.github.com", TOKEN, "not-a-repo")
    with pytest.raises(ValueError):
        GitHubClient("api.github.com", TOKEN, "o/r")


def test_link_to_another_host_is_not_followed(client, fake):
    with pytest.raises(GitHubError, match="not the API host"):
        client.request("GET", "https://evil.example/repos/x")
    assert not [r for r in fake.requests if "evil" in r.path]


# ------------------------------------------------------------------ routes


def test_get_pull_and_files_paginated_with_renames(client, fake):
    files = [f"docs/f{i:03}.md" for i in range(230)] + [("configs/new.yml", "configs/old.yml")]
    fake.add_pull(8, SHA2, files=files)
    names = client.list_pull_files(8)
    assert names[:230] == [f"docs/f{i:03}.md" for i in range(230)]
    assert names[230:] == ["configs/new.yml", "configs/old.yml"]
    gets = fake.requests_to("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files")
    assert len(gets) == 3  # 100 + 100 + 31
    assert gets[0].query["per_page"] == ["100"]
    assert client.get_pull(8).head_sha == SHA2


def test_create_update_delete_comment(client, fake):
    made = client.create_comment(PR, "hello")
    assert fake.comments(PR)[0]["body"] == "hello"
    client.update_comment(made.id, "changed")
    assert fake.comments(PR)[0]["body"] == "changed"
    assert client.delete_comment(made.id) is True
    assert fake.comments(PR) == []
    assert client.delete_comment(made.id) is False  # already gone: not an error


def test_missing_pull_is_not_found(client):
    with pytest.raises(GitHubNotFoundError) as info:
        client.get_pull(999)
    assert info.value.status == 404


def test_comment_body_over_cap_refused_locally(client, fake):
    with pytest.raises(ValueError, match="fit_comment"):
        client.create_comment(PR, "x" * (COMMENT_LIMIT + 1))
    assert not fake.requests_to("POST", COMMENTS)


def test_status_description_truncated_to_140(client, fake):
    client.create_status(SHA1, "failure", "retrieval-gate/main", "nDCG@10 fell " + "x" * 300, target_url="https://example.com/run")
    [posted] = fake.requests_to("POST", "/repos/{owner}/{repo}/statuses/{sha}")
    assert len(posted.json["description"]) == 140
    assert posted.json["description"].endswith("…")
    assert posted.json["state"] == "failure" and posted.json["target_url"] == "https://example.com/run"
    assert fake.state.statuses[0]["context"] == "retrieval-gate/main"
    with pytest.raises(ValueError):
        client.create_status(SHA1, "passed", "ctx", "d")


def test_authenticated_login_best_effort(client, fake):
    assert client.authenticated_login() == DEFAULT_BOT_LOGIN  # GITHUB_TOKEN: GET /user answers 403
    assert len(fake.requests_to("GET", "/user")) == 1  # the 403 is not retried
    fake.user_login = "octocat"
    assert client.authenticated_login() == "octocat"


# ------------------------------------------------------------------ retries


def test_429_retry_after_is_waited_and_retried(client, fake, ftime):
    fake.script_rate_limit(PULL, retry_after=1, times=2)
    assert client.get_pull(PR).number == PR
    assert ftime.sleeps == [1.0, 1.0]
    assert client.waited == 2.0 <= client.max_wait
    assert len(fake.requests_to("GET", PULL)) == 3


def test_ratelimit_remaining_zero_waits_until_reset(client, fake, ftime):
    fake.script_rate_limit(PULL, reset_in=30)
    client.get_pull(PR)
    [slept] = ftime.sleeps
    assert 30 <= slept <= 31  # until x-ratelimit-reset, plus a 1 s margin


def test_secondary_limit_without_header_waits_at_least_60_and_backs_off(fake, ftime):
    client = make_client(fake, ftime, max_wait=1000)
    fake.script_secondary_limit(PULL, times=2)
    client.get_pull(PR)
    assert ftime.sleeps == [60.0, 120.0]


def test_wait_cap_is_respected(fake, ftime):
    client = make_client(fake, ftime, max_wait=120)
    fake.script_rate_limit(PULL, reset_in=3600)  # an exhausted hourly limit
    with pytest.raises(GitHubWaitCapError, match="wait cap"):
        client.get_pull(PR)
    assert ftime.sleeps == []  # it does not sleep part of the way
    fake.script_secondary_limit(PULL, times=5)
    with pytest.raises(GitHubWaitCapError):
        client.get_pull(PR)
    assert sum(ftime.sleeps) <= 120
    assert ftime.sleeps == [60.0]  # the next (120 s) would exceed the remaining budget


def test_wait_budget_is_shared_across_calls(fake, ftime):
    client = make_client(fake, ftime, max_wait=100)
    fake.script_rate_limit(PULL, retry_after=60)
    client.get_pull(PR)
    fake.script_rate_limit(PULL, retry_after=60)
    with pytest.raises(GitHubWaitCapError):
        client.get_pull(PR)
    assert sum(ftime.sleeps) == 60


def test_5xx_retried_a_bounded_number_of_times(client, fake, ftime):
    fake.script_error(PULL, 502, times=2)
    assert client.get_pull(PR).number == PR
    assert ftime.sleeps == [1.0, 2.0]
    fake.script_error(PULL, 500, times=50)
    before = len(fake.requests_to("GET", PULL))
    with pytest.raises(GitHubError, match="500") as info:
        client.get_pull(PR)
    assert info.value.status == 500
    assert len(fake.requests_to("GET", PULL)) - before == 5  # 1 + 4 retries


def test_dropped_connection_is_retried(client, fake, ftime):
    fake.script_disconnect(PULL, times=1)
    assert client.get_pull(PR).number == PR
    assert ftime.sleeps == [1.0]


def test_connection_errors_retried_bounded_with_backoff(ftime):
    with socket.socket() as s:
        s.bind((loopback_address(), 0))
        host, port = s.getsockname()[:2]
    dead = GitHubClient(f"http://{host}:{port}", TOKEN, "o/r", sleep=ftime.sleep, clock=ftime.clock, now=ftime.now)
    with pytest.raises(GitHubError, match="connection error") as info:
        dead.get_pull(1)
    assert ftime.sleeps == [1.0, 2.0, 4.0, 8.0] and info.value.status is None


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "NaN"])
def test_a_retry_after_that_is_no_time_is_absent(fake, ftime, value):
    """retry-after: nan read as a 0 s wait, and the client sent requests back to back."""
    client = make_client(fake, ftime, max_wait=1000)
    fake.script_error(PULL, 429, headers={"retry-after": value}, times=2)
    client.get_pull(PR)
    assert ftime.sleeps == [60.0, 120.0]  # the secondary limit's backoff


@pytest.mark.parametrize("value", ["nan", "inf", "-1e9"])
def test_an_x_ratelimit_reset_that_is_no_time_is_absent(fake, ftime, value):
    client = make_client(fake, ftime, max_wait=1000)
    fake.script_error(PULL, 403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": value},
                      message="API rate limit exceeded for installation ID 1.", times=2)
    client.get_pull(PR)
    assert ftime.sleeps == [60.0, 120.0]


def test_a_5xx_retry_after_that_is_no_time_is_the_backoff(client, fake, ftime):
    fake.script_error(PULL, 503, headers={"retry-after": "nan"}, times=2)
    client.get_pull(PR)
    assert ftime.sleeps == [1.0, 2.0]


def test_retry_after_as_http_date(client, fake, ftime):
    import email.utils

    when = email.utils.formatdate(ftime.now() + 5, usegmt=True)
    fake.script_error(PULL, 429, headers={"retry-after": when})
    client.get_pull(PR)
    assert ftime.sleeps == [5.0]


def test_integration_403_is_not_retried(client, fake, ftime):
    fake.script_integration_error(COMMENTS, method="POST", times=5)
    with pytest.raises(GitHubPermissionError) as info:
        client.create_comment(PR, "x")
    assert info.value.integration and info.value.status == 403
    assert len(fake.requests_to("POST", COMMENTS)) == 1
    assert ftime.sleeps == []


def test_plain_422_not_retried(client, fake, ftime):
    fake.script_error(COMMENTS, 422, method="POST", message="Validation Failed")
    with pytest.raises(GitHubError) as info:
        client.create_comment(PR, "x")
    assert info.value.status == 422 and ftime.sleeps == []


# ------------------------------------------------------------------ sticky comment


def test_marker_roundtrip_and_escaping():
    suite = "evil --> <img src=x>;state=outdated"
    marker = comment_marker(suite, "current", SHA1, "pass")
    assert marker.count("-->") == 1 and marker.endswith(" -->")
    assert "<img" not in marker and "--" not in marker[4:-3]
    parsed = parse_marker(marker + "\nbody")
    assert parsed.suite == suite and parsed.state == "current" and parsed.head == SHA1 and parsed.verdict == "pass"
    assert parse_marker("quoted:\n" + marker) is None  # only at the start of a body


def test_first_publish_creates_exactly_one_comment(client, fake):
    result = publish(client)
    assert isinstance(result, CommentResult) and result.action == "created"
    [comment] = fake.comments(PR)
    assert comment["id"] == result.comment_id and result.url.endswith(f"#issuecomment-{result.comment_id}")
    m = parse_marker(comment["body"])
    assert (m.suite, m.state, m.head, m.verdict) == ("main", "current", SHA1, "pass")
    assert comment["body"].endswith("Result body")


def test_rerun_updates_in_place(client, fake):
    first = publish(client, body="one")
    again = publish(client, body="two")
    assert again.action == "updated" and again.comment_id == first.comment_id
    [comment] = fake.comments(PR)
    assert comment["body"].endswith("two")
    assert len(fake.requests_to("POST", COMMENTS)) == 1


def test_same_verdict_after_new_push_posts_its_own_comment_and_removes_the_older_heads(client, fake):
    """A comment's text is written only by runs of its head (a delayed PATCH of an older head
    could otherwise land over a newer head's result): the new head posts, the old is deleted, so
    the conversation holds one comment, as an edit would leave it."""
    first = publish(client, body="one")
    fake.push(PR, SHA2)
    result = publish(client, head=SHA2, body="two")
    assert result.action == "replaced" and result.deleted == (first.comment_id,)
    [comment] = fake.comments(PR)
    assert parse_marker(comment["body"]).head == SHA2 and comment["body"].endswith("two")


def test_verdict_flip_posts_new_comment_and_marks_old_outdated(client, fake):
    first = publish(client, verdict="pass", body="all good")
    flipped = publish(client, verdict="fail", body="regressed")
    assert flipped.action == "replaced" and flipped.comment_id != first.comment_id
    assert flipped.superseded == (first.comment_id,)
    old, new = fake.comments(PR)
    assert old["id"] == first.comment_id
    m_old, m_new = parse_marker(old["body"]), parse_marker(new["body"])
    assert (m_old.state, m_old.verdict) == ("outdated", "pass")
    assert (m_new.state, m_new.verdict) == ("current", "fail")
    assert old["body"].splitlines()[1].startswith("> **Superseded by a newer result**")
    assert flipped.url in old["body"].splitlines()[1]
    assert "all good" in old["body"]
    # a rerun now updates the new one, the outdated stays as it is
    again = publish(client, verdict="fail", body="regressed again")
    assert again.action == "updated" and again.comment_id == flipped.comment_id
    assert fake.comments(PR)[0]["body"] == old["body"]


def test_duplicates_of_the_same_bot_and_suite_are_removed(client, fake):
    dup1 = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nold 1")
    dup2 = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nold 2")
    other_suite = fake.add_comment(PR, comment_marker("other", "current", SHA1, "pass") + "\nkeep")
    human = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nquoted", login="octocat")
    result = publish(client, body="fresh")
    assert result.action == "updated" and result.comment_id == dup2["id"]  # the newest is kept
    assert result.deleted == (dup1["id"],)
    ids = [c["id"] for c in fake.comments(PR)]
    assert dup1["id"] not in ids and {dup2["id"], other_suite["id"], human["id"]} <= set(ids)
    assert fake.state.comments[human["id"]]["body"].endswith("quoted")  # other authors are never touched


def test_duplicates_removed_on_flip_too(client, fake):
    fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nold 1")
    newest = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nold 2")
    result = publish(client, verdict="fail")
    assert result.action == "replaced" and result.superseded == (newest["id"],) and len(result.deleted) == 1
    states = [parse_marker(c["body"]).state for c in fake.comments(PR)]
    assert states == ["outdated", "current"]


def test_finds_our_comment_on_page_three_of_250(client, fake):
    for i in range(249):
        if i == 230:
            ours_id = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nmine")["id"]
        fake.add_comment(PR, f"chatter {i}", login=f"user{i % 7}")
    assert len(fake.comments(PR)) == 250
    result = publish(client, body="refreshed")
    assert result.action == "updated" and result.comment_id == ours_id
    pages = fake.requests_to("GET", COMMENTS)
    # Listed twice: to find ours, and after writing, to settle on exactly one current comment.
    assert [r.query.get("page", ["1"])[0] for r in pages] == ["1", "2", "3"] * 2
    assert len(fake.comments(PR)) == 250
    assert not fake.requests_to("POST", COMMENTS)


def test_mode_new_always_posts_and_marks_old_outdated(client, fake):
    a = publish(client, mode="new")
    b = publish(client, mode="new")
    assert a.action == "created" and b.action == "replaced" and b.superseded == (a.comment_id,)
    assert [parse_marker(c["body"]).state for c in fake.comments(PR)] == ["outdated", "current"]


def test_mode_off_does_nothing(client, fake):
    result = publish(client, mode="off")
    assert result.action == "skipped_off" and result.url is None
    assert fake.requests == []
    with pytest.raises(ValueError):
        publish(client, mode="sometimes")


def test_run_for_older_head_does_not_overwrite(client, fake):
    publish(client, verdict="pass", body="for sha1")
    fake.push(PR, SHA2)
    publish(client, verdict="fail", head=SHA2, body="for sha2")
    before = fake.comments(PR)
    seen = len(fake.requests)
    late = publish(client, verdict="pass", head=SHA1, body="late run for sha1")
    assert late.action == "skipped_stale" and late.comment_id is None
    assert SHA2[:12] in late.message
    assert fake.comments(PR) == before
    assert [(r.method, r.path) for r in fake.requests[seen:]] == [("GET", f"/repos/{fake.repository}/pulls/{PR}")]


def test_forbidden_on_read_only_token_fork(client, fake):
    fake.add_pull(9, SHA1, fork=True)
    fake.read_only = True
    result = publish_comment(client, 9, "main", SHA1, "pass", "body")
    assert result.action == "forbidden" and result.url is None
    assert "workflow_run" in result.message and "fork" in result.message
    assert len(fake.requests_to("POST", COMMENTS)) == 1  # not retried


def test_forbidden_same_repo_says_grant_permission(client, fake):
    fake.script_integration_error(COMMENTS, method="POST")
    result = publish(client)
    assert result.action == "forbidden"
    assert "pull-requests: write" in result.message


def test_oversized_body_is_fitted_under_the_cap(client, fake):
    body = "\n".join(f"line {i} " + "x" * 80 for i in range(2000))
    result = publish(client, body=body)
    assert result.action == "created"
    [comment] = fake.comments(PR)
    assert len(comment["body"]) <= COMMENT_LIMIT
    assert "cut to fit" in comment["body"]


def test_bot_login_parameter(client, fake):
    fake.token_login = "my-app[bot]"
    result = publish_comment(client, PR, "main", SHA1, "pass", "b", bot_login="my-app[bot]")
    assert result.action == "created"
    assert publish_comment(client, PR, "main", SHA1, "pass", "b2", bot_login="my-app[bot]").action == "updated"


# ------------------------------------------------------------------ fit_comment


def table(rows: int, tag: str) -> str:
    return "\n".join([f"| {tag} | value |", "|---|---:|"] + [f"| {tag}{i} | {i} |" for i in range(rows)])


def assert_tables_whole(text: str) -> None:
    """Every table in ``text`` ends with a complete last row and is followed by a blank line or the end."""
    lines = text.splitlines()
    for line in lines:
        if line.startswith("|"):
            assert line.endswith("|"), f"row cut: {line!r}"


def test_fit_comment_keeps_everything_when_it_fits():
    text = fit_comment([("# Head", False), ("details", True)])
    assert text == "# Head\n\ndetails"


def test_fit_comment_drops_detail_sections_last_first():
    head = "## Verdict: fail\n\n" + table(5, "m")
    d1 = "<details><summary>per query</summary>\n\n" + table(300, "q") + "\n\n</details>"
    d2 = "<details><summary>strata</summary>\n\n" + table(300, "s") + "\n\n</details>"
    tail = "_footer_"
    sections = [(head, False), (d1, True), (d2, True), (tail, False)]
    full = fit_comment(sections, limit=10**6)
    limit = len(full) - 100  # one detail section has to go
    text = fit_comment(sections, limit=limit)
    assert len(text) <= limit
    assert "strata" not in text and "per query" in text  # the last droppable goes first
    assert text.startswith(head) and "_footer_" in text and "1 detail section left out" in text
    text = fit_comment(sections, limit=len(head) + len(tail) + 400)
    assert "strata" not in text and "per query" not in text and "2 detail sections left out" in text
    assert_tables_whole(text)


def test_fit_comment_truncates_outside_tables_with_note():
    head = "## Verdict\n\n" + "\n".join(f"para {i}" for i in range(50))
    big = table(2000, "row")
    sections = [(head, False), (big, False), ("after", False)]
    limit = len(head) + 5000
    text = fit_comment(sections, limit=limit)
    assert len(text) <= limit
    assert "| row |" not in text  # the table could not be kept whole: cut before it
    assert text.rstrip().endswith("and the report artifact.")
    assert "cut to fit" in text and text.startswith(head)


def test_fit_comment_giant_single_table_cut_at_row_boundary():
    text = fit_comment([(table(5000, "r"), False)], limit=20_000)
    assert len(text) <= 20_000
    assert_tables_whole(text)
    assert "cut to fit" in text


def test_fit_comment_never_cuts_a_code_fence_open():
    body = "intro\n\n```\n" + "\n".join(f"log {i}" for i in range(3000)) + "\n```\n\nend"
    text = fit_comment([(body, False)], limit=5000)
    assert len(text) <= 5000
    assert text.count("```") % 2 == 0


# ------------------------------------------------------------------ the fake itself


def test_fake_rejects_requests_github_would_reject(fake):
    need(GITHUB / "openapi_subset_needed_endpoints.json")
    import requests

    headers = {"Authorization": f"Bearer {TOKEN}"}
    r = requests.post(f"{fake.url}/repos/{fake.repository}/issues/{PR}/comments", json={"bdy": "x"}, headers=headers,
                      timeout=5)
    assert r.status_code == 422
    r = requests.post(f"{fake.url}/repos/{fake.repository}/statuses/{SHA1}", json={"state": "green"}, headers=headers,
                      timeout=5)
    assert r.status_code == 422
    r = requests.get(f"{fake.url}/repos/{fake.repository}/pulls/abc", headers=headers, timeout=5)
    assert r.status_code == 404
    r = requests.get(f"{fake.url}/repos/{fake.repository}/pulls/{PR}/files?per_page=x", headers=headers, timeout=5)
    assert r.status_code == 422
    r = requests.put(f"{fake.url}/repos/{fake.repository}/pulls/{PR}", headers=headers, timeout=5)
    assert r.status_code == 404
    assert len(fake.validation_errors) == 5
    fake.validation_errors.clear()


def test_fake_requires_the_token(fake):
    import requests

    r = requests.get(f"{fake.url}/repos/{fake.repository}/pulls/{PR}", headers={"Authorization": "Bearer wrong"},
                     timeout=5)
    assert r.status_code == 401


def test_fake_serves_without_the_spec(tmp_path, ftime):
    with FakeGitHub(spec_path=tmp_path / "absent.json") as server:
        assert not server.validating
        server.add_pull(1, SHA1)
        client = make_client(server, ftime)
        assert publish_comment(client, 1, "s", SHA1, "pass", "b").action == "created"


def test_fake_routes_and_answers_match_the_openapi_description(fake, client):
    spec = _Spec(json.loads(need(GITHUB / "openapi_subset_needed_endpoints.json").read_text(encoding="utf-8")))
    import jsonschema

    served = [
        ("GET", f"/repos/{fake.repository}/pulls/{PR}"),
        ("GET", f"/repos/{fake.repository}/pulls/{PR}/files"),
        ("GET", f"/repos/{fake.repository}/issues/{PR}/comments"),
        ("POST", f"/repos/{fake.repository}/issues/{PR}/comments"),
        ("PATCH", f"/repos/{fake.repository}/issues/comments/1"),
        ("DELETE", f"/repos/{fake.repository}/issues/comments/1"),
        ("POST", f"/repos/{fake.repository}/statuses/{SHA1}"),
        ("GET", f"/repos/{fake.repository}/commits/{SHA1}/status"),
        ("GET", "/rate_limit"),
    ]
    for method, path in served:
        assert isinstance(spec.match(method, path), tuple), (method, path)

    fake.add_pull(PR, SHA1, files=["a.yml", ("b.yml", "c.yml")])
    repo = f"/repos/{fake.repository}"

    def raw(method: str, path: str, **kw):  # the fake's JSON itself, before the client reads it
        return client.request(method, repo + path if path.startswith("/") and path != "/rate_limit" else path,
                              **kw).json()

    checks = [
        ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post", "201",
         raw("POST", f"/issues/{PR}/comments", json={"body": "x"}, idempotent=False)),
        ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get", "200", raw("GET", f"/issues/{PR}/comments")),
        ("/repos/{owner}/{repo}/pulls/{pull_number}/files", "get", "200",
         list(client.paginate(f"/repos/{fake.repository}/pulls/{PR}/files"))),
        ("/repos/{owner}/{repo}/statuses/{sha}", "post", "201", client.create_status(SHA1, "success", "c", "d")),
        ("/rate_limit", "get", "200", client.rate_limit()),
    ]
    for template, method, code, payload in checks:
        response = spec.doc["paths"][template][method]["responses"][code]
        schema = spec.to_jsonschema(response["content"]["application/json"]["schema"])
        errors = list(jsonschema.Draft7Validator(schema).iter_errors(payload))
        assert not errors, (template, [e.message for e in errors[:3]])


# ------------------------------------------------------------------ races and lost answers


def _current(fake: FakeGitHub) -> list[dict]:
    return [c for c in ours(fake) if parse_marker(c["body"]).state == "current"]


def test_a_comment_deleted_meanwhile_is_created_again(client, fake):
    assert publish(client, body="first").action == "created"
    fake.script_error(COMMENT, 404, method="PATCH", times=1)  # deleted between our list and our edit
    result = publish(client, body="second")
    assert result.action == "created" and len(_current(fake)) == 1
    assert _current(fake)[0]["body"].endswith("second")


def test_a_post_whose_answer_was_lost_is_not_posted_twice(client, fake):
    fake.script_lost_answer(COMMENTS, method="POST", times=1)
    result = publish(client, body="once")
    assert result.action == "created"
    assert len(ours(fake)) == 1 and len(fake.requests_to("POST", COMMENTS)) == 1
    assert result.comment_id == ours(fake)[0]["id"]


def test_a_post_that_failed_for_good_is_retried_after_looking(client, fake):
    fake.script_error(COMMENTS, 502, method="POST", times=1)  # not applied
    result = publish(client, body="after a 502")
    assert result.action == "created" and len(ours(fake)) == 1
    assert len(fake.requests_to("POST", COMMENTS)) == 2


def test_two_runs_that_raced_converge_on_one_current_comment(client, fake):
    # Another run for the same head posted its comment between our list and our POST.
    racer = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass", "ab12") + "\nthe other run")
    result = publish(client, body="this run")
    assert result.action == "updated" and result.comment_id == racer["id"]
    # Now a true race: two comments current for the same head; the next run keeps the newest only.
    second = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass", "cd34") + "\nyet another")
    result = publish(client, body="third")
    assert [c["id"] for c in _current(fake)] == [second["id"]] and result.comment_id == second["id"]


def test_a_run_whose_pr_moved_on_while_it_wrote_leaves_no_current_comment(client, fake, monkeypatch):
    calls = {"n": 0}
    real = client.get_pull

    def moving(number):
        calls["n"] += 1
        data = real(number)
        if calls["n"] >= 3:  # after our write: a newer push arrived
            data = dataclasses.replace(data, head_sha="2" * 40)
        return data

    monkeypatch.setattr(client, "get_pull", moving)
    result = publish(client, body="soon outdated")
    assert result.action == "skipped_stale"
    assert _current(fake) == [] and len(ours(fake)) == 1  # written, then marked outdated


def test_a_token_of_another_identity_updates_its_own_comment(fake, ftime):
    """A personal access token: GET /user names the author, so the second run edits, not posts."""
    fake.user_login = "release-bot"
    fake.token_login = "release-bot"
    client = make_client(fake, ftime)
    assert publish(client, body="one").action == "created"
    assert publish(client, body="two").action == "updated"
    assert len(ours(fake)) == 1


@pytest.mark.parametrize("behaviour", ["silent", "trickle", "stall"])
def test_one_deadline_bounds_every_call(behaviour):
    """A server that accepts and never answers, trickles its answer a byte a second, or stops
    half-way: the whole publish ends by the budget (1 s), not 300 s per read and retry, and as a
    GitHubError (the Action's warning), never another exception. (The bound on the time taken is
    far from both: a loaded machine cannot reach it, a client without the deadline cannot miss it.)"""
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind((loopback_address(), 0))
    listener.listen(16)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=hold, args=(conn,), daemon=True).start()

    def hold(conn):
        conn.recv(65536)
        if behaviour in ("trickle", "stall"):  # stall: half an answer, then nothing
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[{")
        while not stop.is_set():
            if behaviour == "trickle":
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
            time.sleep(1)

    accepting = threading.Thread(target=serve, daemon=True)
    accepting.start()
    url = "http://{}:{}".format(*listener.getsockname()[:2])
    client = GitHubClient(url, TOKEN, "octo-org/octo-repo", max_wait=1, timeout=300)
    started = time.monotonic()
    try:
        with pytest.raises(GitHubError):
            publish(client)
    finally:
        stop.set()
        close_listener(listener, accepting)
    assert time.monotonic() - started < 100


def test_the_budget_counts_time_inside_calls_not_the_run_between_them(fake, ftime):
    """github-max-wait caps the seconds spent on GitHub. The Action makes its client before it runs
    the stack for minutes; counted from the client's creation, the budget was spent by the time the
    comment was due, and no gate run longer than 120 s ever commented (found by the test-tier work)."""
    client = make_client(fake, ftime, max_wait=20)
    assert client.get_pull(PR).head_sha == SHA1
    ftime.t += 3600  # the stack runs for an hour between the two calls
    assert client.get_pull(PR).head_sha == SHA1
    assert client.spent < 20
