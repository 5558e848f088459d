"""The token scrubbed from text in every form it travels in: a hostile git server can echo the
``AUTHORIZATION: basic <base64 of x-access-token:TOKEN>`` header git sent it into an ERR
packet, which plan's warning quoted."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from gate.common.environment import scrub_token
from gate.inputs import git

TOKEN = "ghs_Scrub1234567890abcdefghijklmnopq~?>?"  # 40 characters: padded; "~?>" differ in url-safe base64


def _forms() -> list[str]:
    found = []
    for secret in (f"x-access-token:{TOKEN}", TOKEN):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(secret.encode()).decode()
            found += [text, text.rstrip("=")]
    return found


def test_the_forms_differ():
    assert len(set(_forms())) == 8 and any(form.endswith("=") for form in _forms())


@pytest.mark.parametrize("form", _forms())
def test_every_base64_form_is_scrubbed(form):
    text = f"fatal: remote error: AUTHORIZATION: basic {form}\n"
    assert scrub_token(text, TOKEN) == "fatal: remote error: AUTHORIZATION: basic ***\n"
    assert scrub_token(text.encode(), TOKEN) == b"fatal: remote error: AUTHORIZATION: basic ***\n"


def test_the_token_itself_is_scrubbed_and_other_text_kept():
    assert scrub_token(f"a {TOKEN} b", TOKEN) == "a *** b"
    assert scrub_token("nothing secret", TOKEN) == "nothing secret"
    assert scrub_token(f"a {TOKEN}", None) == f"a {TOKEN}"


def test_a_failed_fetch_says_what_the_server_said_without_the_token(monkeypatch, tmp_path):
    """The fetch with the token fails and the server echoed the header: its stderr, which the
    caller quotes in a warning, holds no form of the token."""
    real_run = git.run
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()

    def run(cwd: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
        if args and args[0] == "fetch" and kwargs.get("extra_env", {}).get("GIT_CONFIG_COUNT"):
            return subprocess.CompletedProcess(["git", *args], 128, b"",
                                               f"fatal: remote error: AUTHORIZATION: basic {basic}\n".encode())
        return real_run(cwd, *args, **kwargs)

    monkeypatch.setattr(git, "run", run)
    done = git.fetch(tmp_path, "+refs/heads/x:refs/retrieval-gate/x", token=TOKEN,
                     url="https://github.example/o/r", depth=1)
    assert done.returncode == 128
    assert done.stderr == b"fatal: remote error: AUTHORIZATION: basic ***\n"
