"""Races on the sticky comment, with the order of events injected, not slept into.

(a) an older head's write is delayed in the network and lands after the newer head's run has
    finished; (b) a POST is applied but its answer lost, and GitHub's comment list lags its
    writes by 2.5 s. Both must end with exactly one current comment, carrying the newest head's
    verdict. The fake GitHub holds a request until the test releases it (script_hold), and
    counts the list's lag in the tests' fake clock, which only the client's sleeps advance.
"""

from __future__ import annotations

import threading

import pytest

from gate.publishing.github.client import GitHubClient
from gate.publishing.github.sticky_comment import CommentResult, comment_marker, parse_marker, publish_comment
from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.test_client import FakeTime

TOKEN = "ghs_Races1234567890abcdefghijklmnopqrs"
SHA1, SHA2 = "1" * 40, "2" * 40
PR = 7
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"


@pytest.fixture
def ftime() -> FakeTime:
    return FakeTime()


@pytest.fixture
def fake(ftime):
    with FakeGitHub(token=TOKEN) as server:
        server.clock = ftime.clock
        server.add_pull(PR, SHA1, files=["retrieval.yml"])
        yield server
    server.assert_valid()


def _client(fake: FakeGitHub, ftime: FakeTime) -> GitHubClient:
    return GitHubClient(fake.url, TOKEN, fake.repository, sleep=ftime.sleep, clock=ftime.clock, now=ftime.now)


def _publish(fake, ftime, head: str, verdict: str, body: str) -> CommentResult:
    return publish_comment(_client(fake, ftime), PR, "main", head, verdict, body)


def _current(fake: FakeGitHub) -> list[tuple[str, str, str]]:
    """(head, verdict, text) of every current comment of the suite, everything listed or not."""
    found = []
    for comment in fake.comments(PR):
        marker = parse_marker(comment["body"])
        if marker is not None and marker.state == "current":
            found.append((marker.head, marker.verdict, comment["body"].split("\n", 1)[1]))
    return found


class Background:
    """A publish run in a thread (the older head's run, whose write the fake holds)."""

    def __init__(self, target):
        self.result: CommentResult | None = None
        self.error: BaseException | None = None

        def run():
            try:
                self.result = target()
            except BaseException as error:  # noqa: BLE001 - handed to the test
                self.error = error

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> CommentResult:
        self.thread.join(120)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


@pytest.mark.parametrize("newer_verdict", ["pass", "fail"])
def test_an_older_heads_delayed_edit_does_not_bury_the_newer_result(fake, ftime, newer_verdict):
    """Head 1 is judged and commented. A rerun of head 1 edits its comment, and that PATCH is
    held in the network; head 2 is pushed, and its run finishes; then the held PATCH lands.
    Before: head 2's run had edited the same comment in place, the late PATCH overwrote it with
    head 1's result, and head 1's run then marked it outdated: no current comment at all."""
    assert _publish(fake, ftime, SHA1, "pass", "head 1, first run").action == "created"
    held = fake.script_hold(COMMENT, method="PATCH")
    older = Background(lambda: _publish(fake, FakeTime(ftime.t), SHA1, "pass", "head 1, rerun"))
    assert held.arrived.wait(60)  # the rerun's PATCH is on its way, not applied
    fake.push(PR, SHA2)
    newer = _publish(fake, ftime, SHA2, newer_verdict, "head 2")
    assert newer.action == "replaced"
    held.release()  # the delayed PATCH lands now
    late = older.join()
    assert late.action == "skipped_stale", late
    assert _current(fake) == [(SHA2, newer_verdict, "head 2")]


def test_an_older_heads_delayed_post_does_not_stand_beside_the_newer_result(fake, ftime):
    """Head 1's first POST is held; head 2's run posts and finishes; head 1's comment then
    appears: head 1's run sees the PR moved on and marks its own comment outdated."""
    held = fake.script_hold(COMMENTS, method="POST")
    older = Background(lambda: _publish(fake, FakeTime(ftime.t), SHA1, "fail", "head 1"))
    assert held.arrived.wait(60)
    fake.push(PR, SHA2)
    assert _publish(fake, ftime, SHA2, "pass", "head 2").action == "created"
    held.release()
    assert older.join().action == "skipped_stale"
    assert _current(fake) == [(SHA2, "pass", "head 2")]


def test_the_older_heads_run_that_settles_last_leaves_the_newer_result(fake, ftime):
    """The older head's whole write lands before the newer head's run, which then settles: the
    PR's current head (GET /pulls/{n}), not a clock, says whose comment stands."""
    fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass", "ab12") + "\nhead 1, run a")
    fake.push(PR, SHA2)
    # A run of head 1 whose comment landed late, after the push: still current, of the old head.
    fake.add_comment(PR, comment_marker("main", "current", SHA1, "fail", "cd34") + "\nhead 1, run b")
    assert _publish(fake, ftime, SHA2, "pass", "head 2").action == "replaced"
    assert _current(fake) == [(SHA2, "pass", "head 2")]


def test_a_lost_post_answer_with_a_lagging_list_leaves_one_comment(fake, ftime):
    """The POST is applied but its answer lost, and GitHub lists a comment only 2.5 s after it
    is made. Before: one look at the list, a 1 s backoff, and a second POST: two current
    comments, and the settling list (lagging too) saw neither twin."""
    fake.list_lag = 2.5
    fake.script_lost_answer(COMMENTS, method="POST")
    result = _publish(fake, ftime, SHA1, "pass", "once")
    ftime.t += 60  # long after: everything is listed
    assert _current(fake) == [(SHA1, "pass", "once")]
    assert len(fake.requests_to("POST", COMMENTS)) == 1
    assert result.action == "created" and result.comment_id == fake.comments(PR)[0]["id"]


def test_a_lost_post_that_is_listed_too_late_is_deduplicated_by_the_next_run(fake, ftime):
    """The list lags beyond the run's patience (60 s): the run posts once more, and its twin
    is removed by the next run, which sees both (one current comment, the newest)."""
    fake.list_lag = 60
    fake.script_lost_answer(COMMENTS, method="POST")
    _publish(fake, ftime, SHA1, "pass", "first run")
    ftime.t += 120
    assert len(_current(fake)) == 2  # the twin the first run could not see
    assert _publish(fake, ftime, SHA1, "pass", "second run").action == "updated"
    ftime.t += 120
    assert _current(fake) == [(SHA1, "pass", "second run")]


def test_two_runs_of_the_same_head_whose_posts_cross_converge(fake, ftime):
    """Two runs of one head post at once (each listed no comment): whichever settles keeps the
    newest and deletes the other; the other's settling agrees."""
    held = fake.script_hold(COMMENTS, method="POST")
    first = Background(lambda: _publish(fake, FakeTime(ftime.t), SHA1, "pass", "run 1"))
    assert held.arrived.wait(60)
    second = _publish(fake, ftime, SHA1, "pass", "run 2")
    held.release()
    first.join()
    assert [c[0] for c in _current(fake)] == [SHA1]
    assert second.action == "created"


def _forging(fake: FakeGitHub, client: GitHubClient) -> None:
    """Whatever becomes of each POST, a person ("mallory") at once posts a comment carrying its
    marker, run id included (it is in the comment's source, visible to anyone)."""
    real_create = client.create_comment

    def create_then_forge(number, body):
        try:
            return real_create(number, body)
        finally:
            fake.add_comment(PR, body.split("\n", 1)[0] + "\n### pass (forged by mallory)", login="mallory")

    client.create_comment = create_then_forge  # type: ignore[method-assign]


def test_a_copied_run_marker_does_not_make_a_persons_comment_the_gates(fake, ftime):
    """Before: the copy was adopted as this run's (same run id), the gate's real comment deleted
    as its duplicate, and the forged one reported as the result."""
    client = _client(fake, ftime)
    _forging(fake, client)
    result = publish_comment(client, PR, "main", SHA1, "fail", "the real verdict")
    gates = [c for c in fake.comments(PR) if c["login"] == "github-actions[bot]"]
    assert [c["body"].split("\n", 1)[1] for c in gates] == ["the real verdict"]
    assert result.comment_id == gates[0]["id"] and result.deleted == ()


def test_after_a_lost_post_only_a_bots_comment_with_the_run_id_is_the_runs(fake, ftime):
    """An App's token writes as "<slug>[bot]", a login the run cannot know before a write answers
    (GET /user says nothing): a lost POST's comment is found by its run id, and only a bot's."""
    fake.token_login = "myapp[bot]"
    fake.script_lost_answer(COMMENTS, method="POST")
    client = _client(fake, ftime)
    _forging(fake, client)
    result = publish_comment(client, PR, "main", SHA1, "fail", "the real verdict")
    assert len(fake.requests_to("POST", COMMENTS)) == 1  # its own comment found, not posted again
    gates = [c for c in fake.comments(PR) if c["login"] == "myapp[bot]"]
    assert [c["body"].split("\n", 1)[1] for c in gates] == ["the real verdict"]
    assert result.comment_id == gates[0]["id"] and result.deleted == ()
