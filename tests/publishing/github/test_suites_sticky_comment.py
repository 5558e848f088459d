"""The combined comment of a set of suites (publish_suites_comment) against the fake GitHub: one
current comment per set, kept by every rule of "The PR comment" (docs/action.md) as one suite's
is, and never taking the place of a suite's own comment."""

from __future__ import annotations

import pytest

from gate.publishing.github.sticky_comment import (
    comment_marker,
    parse_marker,
    publish_comment,
    publish_suites_comment,
    suite_set_name,
)
from tests.publishing.github import test_client
from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.test_client import COMMENTS, PR, SHA1, SHA2

SUITES = ".retrieval-gate.yml"
# The fake GitHub and a client of it, as the single comment's tests have them.
ftime, fake, client = test_client.ftime, test_client.fake, test_client.client


def publish(client, worst="pass", body="the table", head=SHA1, suites=SUITES, **options):
    return publish_suites_comment(client, PR, head, suites, worst, body, **options)


def markers(fake: FakeGitHub) -> list[tuple[str, str, str, str]]:
    return [(m.suite, m.state, m.head, m.verdict) for c in fake.comments(PR) if (m := parse_marker(c["body"]))]


def test_the_set_posts_one_comment_named_after_its_suites_file_with_the_worst_verdict(client, fake):
    result = publish(client, worst="fail")
    assert result.action == "created"
    assert markers(fake) == [("suites|.retrieval-gate.yml", "current", SHA1, "fail")]
    assert fake.comments(PR)[0]["body"].endswith("the table")


def test_a_rerun_edits_it_in_place_however_the_path_is_written(client, fake):
    first = publish(client, body="one")
    again = publish(client, body="two", suites="./.retrieval-gate.yml")
    assert again.action == "updated" and again.comment_id == first.comment_id
    assert len(fake.requests_to("POST", COMMENTS)) == 1
    [comment] = fake.comments(PR)
    assert comment["body"].endswith("two")


def test_a_suites_own_comment_and_the_sets_are_kept_apart(client, fake):
    """A suite named like the set's marker is impossible ('|' is refused in a suite's name); a
    suite's own comment (from before the repository had a suites file) is left as it is."""
    own = publish_comment(client, PR, "docs", SHA1, "pass", "docs alone")
    result = publish(client, worst="fail")
    assert result.action == "created" and result.superseded == () and result.deleted == ()
    assert fake.state.comments[own.comment_id]["body"].endswith("docs alone")
    assert sorted(markers(fake)) == [("docs", "current", SHA1, "pass"),
                                     ("suites|.retrieval-gate.yml", "current", SHA1, "fail")]
    # Two suites files are two sets.
    other = publish(client, suites="search/suites.yml")
    assert other.action == "created" and len(markers(fake)) == 3


def test_a_new_head_with_the_same_worst_verdict_replaces_and_deletes_the_older(client, fake):
    first = publish(client, worst="pass")
    fake.push(PR, SHA2)
    result = publish(client, worst="pass", head=SHA2, body="newer")
    assert result.action == "replaced" and result.deleted == (first.comment_id,)
    assert markers(fake) == [("suites|.retrieval-gate.yml", "current", SHA2, "pass")]


def test_a_new_worst_verdict_marks_the_older_outdated(client, fake):
    first = publish(client, worst="pass", body="all suites pass")
    fake.push(PR, SHA2)
    result = publish(client, worst="fail", head=SHA2, body="docs fails")
    assert result.action == "replaced" and result.superseded == (first.comment_id,)
    assert markers(fake) == [("suites|.retrieval-gate.yml", "outdated", SHA1, "pass"),
                             ("suites|.retrieval-gate.yml", "current", SHA2, "fail")]
    assert fake.state.comments[first.comment_id]["body"].splitlines()[1].startswith("> **Superseded")


def test_duplicates_of_the_set_are_deleted(client, fake):
    name = suite_set_name(SUITES)
    older = fake.add_comment(PR, comment_marker(name, "current", SHA1, "pass") + "\nold 1")
    newer = fake.add_comment(PR, comment_marker(name, "current", SHA1, "pass") + "\nold 2")
    result = publish(client, body="fresh")
    assert result.action == "updated" and result.comment_id == newer["id"] and result.deleted == (older["id"],)


def test_an_older_heads_run_writes_nothing(client, fake):
    publish(client)
    fake.push(PR, SHA2)
    before = fake.comments(PR)
    late = publish(client, worst="fail", head=SHA1, body="late")
    assert late.action == "skipped_stale" and fake.comments(PR) == before


def test_every_suite_skipped_posts_nothing_and_outdates_an_earlier_heads_comment(client, fake):
    nothing = publish(client, worst="skipped", only_update=True)
    assert nothing.action == "not_posted" and fake.comments(PR) == []
    judged = publish(client, worst="fail", body="docs fails")
    fake.push(PR, SHA2)
    retired = publish(client, worst="skipped", head=SHA2, only_update=True)
    assert retired.action == "retired" and retired.superseded == (judged.comment_id,)
    assert markers(fake) == [("suites|.retrieval-gate.yml", "outdated", SHA1, "fail")]
    assert not fake.requests_to("POST", COMMENTS)[1:]


def test_the_sets_name_is_short_and_plain_whatever_the_path():
    assert suite_set_name("./search//suites.yml") == "suites|search/suites.yml"
    assert suite_set_name("search\\suites.yml") == "suites|search/suites.yml"
    long = suite_set_name("a/" * 200 + "x.yml")
    assert long.startswith("suites|sha256:") and len(long) == len("suites|sha256:") + 64
    marker = comment_marker(suite_set_name("services/*/.retrieval-gate.yml --> <b>"), "current", SHA1, "fail")
    assert marker.count("-->") == 1 and "<b>" not in marker
    assert parse_marker(marker).suite == "suites|services/*/.retrieval-gate.yml --> <b>"
    with pytest.raises(ValueError):
        suite_set_name("./")
