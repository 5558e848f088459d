"""The environment a runner subprocess sees: this process's, minus every credential; and text
scrubbed of the GitHub token in every form it travels in."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

Text = TypeVar("Text", str, bytes)

# Names that hold credentials in CI. Anything else with these words in its
# name is dropped too unless the config lists it in runner.env_passthrough.
_ALWAYS_DROPPED = {"GITHUB_TOKEN", "INPUT_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"}
_SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSWORD|KEY", re.IGNORECASE)


def is_credential(name: str) -> bool:
    return never_passed(name) or bool(_SECRET_WORDS.search(name.upper()))


def never_passed(name: str) -> bool:
    """The GitHub token and the runner's ``ACTIONS_*`` credentials: no config can hand them on
    (to a command's environment, or to a search service in a header)."""
    upper = name.upper()
    return upper in _ALWAYS_DROPPED or upper.startswith("ACTIONS_")


def scrubbed_environment(
    passthrough: Iterable[str] = (), base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A copy of the environment without credentials.

    ``passthrough`` may re-admit a name that only matched the generic words
    (an embedding service's ``OPENAI_API_KEY``, say); the GitHub token and
    ``ACTIONS_*`` never pass, whatever the config says.
    """
    allowed = {name.upper() for name in passthrough}
    env = {}
    for name, value in (base if base is not None else os.environ).items():
        if never_passed(name):
            continue
        if is_credential(name) and name.upper() not in allowed:
            continue
        env[name] = value
    if extra:
        env.update(extra)
    return env


def token_forms(token: str) -> list[str]:
    """The token as it can show in a message: itself, and the base64 git sends it as
    (``AUTHORIZATION: basic <base64 of x-access-token:TOKEN>``, which a hostile server can echo
    back in an error), of that and of the token alone, standard and url-safe, with and without
    padding. Longest first, so no form is cut by a shorter one's replacement."""
    forms = {token}
    for secret in (f"x-access-token:{token}", token):
        raw = secret.encode("utf-8")
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            text = encoded.decode("ascii")
            forms.update((text, text.rstrip("=")))
    return sorted((form for form in forms if form), key=len, reverse=True)


def scrub_token(text: Text, token: str | None) -> Text:
    """``text`` with every form of ``token`` (:func:`token_forms`) replaced by ``***``."""
    if not token:
        return text
    for form in token_forms(token):
        if isinstance(text, bytes):
            text = text.replace(form.encode("utf-8"), b"***")
        else:
            text = text.replace(form, "***")
    return text
