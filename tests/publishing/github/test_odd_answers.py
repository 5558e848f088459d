"""GitHub's odd answers at the client's boundary: every route's answer is checked against the
shape GitHub documents, and a wrong one is a GitHubAnswerError (a GitHub problem, as an outage
is), never a TypeError or AttributeError deep in the gate (which the Action and `comment` turn
into exit 4)."""

from __future__ import annotations

import json

import pytest

from gate.publishing.github.answers import FIELDS_READ, parse_pull
from gate.publishing.github.client import GitHubAnswerError, GitHubClient, GitHubError
from gate.publishing.github.sticky_comment import comment_marker, publish_comment
from tests.publishing.github.fake_github import FakeGitHub, _Spec
from tests.shared_data import GITHUB, need

TOKEN = "ghs_OddAnswers1234567890abcdefghijkl"
SHA1 = "1" * 40
PR = 7
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
FILES = "/repos/{owner}/{repo}/pulls/{pull_number}/files"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
STATUSES = "/repos/{owner}/{repo}/statuses/{sha}"


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as server:
        server.add_pull(PR, SHA1, files=["a.yml"], labels=["retrieval-gate:accept"], body="why")
        yield server


@pytest.fixture
def client(fake):
    return GitHubClient(fake.url, TOKEN, fake.repository, max_wait=30, sleep=lambda s: None)


def _real_pull(fake: FakeGitHub) -> dict:
    return fake._pull_json(fake.state.pulls[PR])


def _comment_json(fake: FakeGitHub, **changes) -> dict:
    made = fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nbody")
    data = fake._comment_json(made)
    fake.state.comments.pop(made["id"])
    data.update(changes)
    return data


ODD_PULLS = {
    "an empty array": [],
    "null": None,
    "labels as plain strings": "labels",
    "labels null": "labels-null",
    "no head": "no-head",
    "a head sha that is a number": "sha-number",
    "a number that is a string": "number-string",
    "a head repo that is a string": "repo-string",
    "another pull request": "other-number",
}


def _odd_pull(fake: FakeGitHub, kind):
    if not isinstance(kind, str):
        return kind
    pull = _real_pull(fake)
    if kind == "labels":
        pull["labels"] = ["retrieval-gate:accept"]
    elif kind == "labels-null":
        pull["labels"] = None
    elif kind == "no-head":
        del pull["head"]
    elif kind == "sha-number":
        pull["head"]["sha"] = 1234
    elif kind == "number-string":
        pull["number"] = str(PR)
    elif kind == "repo-string":
        pull["head"]["repo"] = "octo-org/octo-repo"
    elif kind == "other-number":
        pull["number"] = PR + 1
    return pull


@pytest.mark.parametrize("kind", ODD_PULLS.values(), ids=list(ODD_PULLS))
def test_an_odd_pull_request_is_a_github_answer_error(fake, client, kind):
    fake.script_answer(PULL, _odd_pull(fake, kind), method="GET")
    with pytest.raises(GitHubAnswerError) as info:
        client.get_pull(PR)
    assert TOKEN not in str(info.value) and "\n" not in str(info.value)


def test_the_pull_request_as_github_documents_it_is_read(fake, client):
    pull = client.get_pull(PR)
    assert (pull.number, pull.head_sha, pull.labels, pull.body) == (PR, SHA1, ("retrieval-gate:accept",), "why")
    assert pull.from_fork is False
    # A deleted fork: head.repo is null (GitHub's answer, though its description says an object).
    gone = _real_pull(fake)
    gone["head"]["repo"] = None
    fake.script_answer(PULL, gone, method="GET")
    assert client.get_pull(PR).from_fork is True


def test_the_webhooks_pull_request_reads_as_the_apis():
    """The event's pull_request object is the same schema as GET /pulls/{n}'s answer: GitHub's own
    example parses (labels as objects, a body, head and base repositories)."""
    event = json.loads(need(GITHUB / "webhook_example_pull_request_synchronize.payload.json").read_text())
    pull = parse_pull(event["pull_request"])
    assert pull.head_sha == event["pull_request"]["head"]["sha"] and pull.labels == ("bug",)


ODD_COMMENT_IDS = {"a string": "abc", "a float": 1.5, "a boolean": True, "null": None, "zero": 0, "negative": -3}


@pytest.mark.parametrize("value", ODD_COMMENT_IDS.values(), ids=list(ODD_COMMENT_IDS))
def test_a_comment_id_that_is_not_an_integer_is_a_github_answer_error(fake, client, value):
    fake.script_answer(COMMENTS, [_comment_json(fake, id=value)], method="GET")
    with pytest.raises(GitHubAnswerError, match="'id'"):
        client.list_issue_comments(PR)
    fake.script_answer(COMMENTS, _comment_json(fake, id=value), method="POST", status=201)
    with pytest.raises(GitHubAnswerError):
        client.create_comment(PR, "x")


ODD_ANSWERS = [
    ("GET", COMMENTS, None, "list_issue_comments"),
    ("GET", COMMENTS, {"message": "not a list"}, "list_issue_comments"),
    ("GET", COMMENTS, ["a comment as a string"], "list_issue_comments"),
    ("GET", COMMENTS, "user-string", "list_issue_comments"),
    ("GET", COMMENTS, "body-number", "list_issue_comments"),
    ("GET", FILES, None, "list_pull_files"),
    ("GET", FILES, ["a.yml"], "list_pull_files"),
    ("GET", FILES, [{"filename": 3}], "list_pull_files"),
    ("POST", COMMENTS, [], "create_comment"),
    ("POST", COMMENTS, None, "create_comment"),
    ("PATCH", COMMENT, None, "update_comment"),
    ("PATCH", COMMENT, "user-string", "update_comment"),
    ("POST", STATUSES, None, "create_status"),
    ("POST", STATUSES, {"id": "x", "state": "success"}, "create_status"),
    ("GET", "/rate_limit", [], "rate_limit"),
]


@pytest.mark.parametrize("method,route,payload,call", ODD_ANSWERS,
                         ids=[f"{m} {r.rsplit('/', 1)[-1]} {json.dumps(p)[:30]}" for m, r, p, _ in ODD_ANSWERS])
def test_every_route_checks_its_answer(fake, client, method, route, payload, call):
    if payload == "user-string":
        payload = _comment_json(fake, user="github-actions[bot]")
    elif payload == "body-number":
        payload = _comment_json(fake, body=12)
    if method == "GET" and route == COMMENTS and isinstance(payload, dict):
        payload = [payload]
    fake.script_answer(route, payload, method=method, status=201 if method == "POST" else 200)
    calls = {
        "list_issue_comments": lambda: client.list_issue_comments(PR),
        "list_pull_files": lambda: client.list_pull_files(PR),
        "create_comment": lambda: client.create_comment(PR, "x"),
        "update_comment": lambda: client.update_comment(1, "x"),
        "create_status": lambda: client.create_status(SHA1, "success", "ctx", "d"),
        "rate_limit": lambda: client.rate_limit(),
    }
    with pytest.raises(GitHubAnswerError):
        calls[call]()


def test_an_answer_that_is_not_json_is_a_github_answer_error(fake, client):
    fake.script_answer(PULL, b"<html>a proxy's page</html>", method="GET")
    with pytest.raises(GitHubAnswerError, match="not JSON"):
        client.get_pull(PR)


def test_an_odd_user_is_github_not_saying_who(fake, client):
    fake.script_answer("/user", [], method="GET")
    assert client.authenticated_login() == "github-actions[bot]"


@pytest.mark.parametrize("route,method,payload", [
    (PULL, "GET", []), (PULL, "GET", None), (PULL, "GET", "labels"),
    (COMMENTS, "GET", None), (COMMENTS, "GET", "id-string"), (COMMENTS, "POST", []), (COMMENT, "PATCH", None),
], ids=["pull []", "pull null", "pull labels strings", "list null", "list id string", "post []", "patch null"])
def test_publishing_through_an_odd_answer_is_a_github_error(fake, client, route, method, payload):
    """The sticky comment over each odd answer: a GitHubError (the Action's warning, `comment`'s
    exit 3), nothing else."""
    if method == "PATCH":  # a comment to edit in place
        fake.add_comment(PR, comment_marker("main", "current", SHA1, "pass") + "\nold")
    if payload == "labels":
        payload = _odd_pull(fake, "labels")
    elif payload == "id-string":
        payload = [_comment_json(fake, id="1000001x")]
    fake.script_answer(route, payload, method=method, times=50, status=201 if method == "POST" else 200)
    with pytest.raises(GitHubError) as info:
        publish_comment(client, PR, "main", SHA1, "pass", "body")
    assert isinstance(info.value, GitHubAnswerError)


def test_the_fields_read_are_those_githubs_description_documents():
    """Every field the parsers read (answers.FIELDS_READ) is in GitHub's OpenAPI description, with
    that type: the checks are GitHub's documented schema, not a guess."""
    spec = _Spec(json.loads(need(GITHUB / "openapi_subset_needed_endpoints.json").read_text(encoding="utf-8")))
    schemas = spec.doc["components"]["schemas"]
    for schema_name, path, kind in FIELDS_READ:
        node = schemas[schema_name]
        for step in path.split("."):
            array = step.endswith("[]")
            node = spec.resolve(node)
            assert step.rstrip("[]") in node.get("properties", {}), (schema_name, path)
            node = spec.resolve(node["properties"][step.rstrip("[]")])
            if array:
                assert node.get("type") == "array", (schema_name, path)
                node = spec.resolve(node["items"])
        assert spec.resolve(node).get("type") == kind, (schema_name, path, node.get("type"))


DEEP = b"[" * 200_000


def test_an_answer_nested_too_deeply_is_a_github_answer_error(fake, client):
    """200 KB of '[' makes the JSON parser recurse past Python's stack: an odd answer, not a crash."""
    fake.script_answer(PULL, DEEP, method="GET")
    with pytest.raises(GitHubAnswerError, match="nested too deeply"):
        client.get_pull(PR)


@pytest.mark.parametrize("status", [401, 422])
def test_an_error_answer_nested_too_deeply_is_a_github_error(fake, client, status):
    fake.script_answer(PULL, DEEP, method="GET", status=status)
    with pytest.raises(GitHubError) as info:
        client.get_pull(PR)
    assert info.value.status == status


def test_publishing_through_a_deeply_nested_answer_is_a_github_error(fake, client):
    fake.script_answer(COMMENTS, DEEP, method="GET", times=50)
    with pytest.raises(GitHubAnswerError):
        publish_comment(client, PR, "main", SHA1, "pass", "body")
