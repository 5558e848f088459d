"""The environment a runner subprocess sees: this process's, minus every credential."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Names that hold credentials in CI. Anything else with these words in its
# name is dropped too unless the config lists it in runner.env_passthrough.
_ALWAYS_DROPPED = {"GITHUB_TOKEN", "INPUT_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"}
_SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSWORD|KEY", re.IGNORECASE)


def is_credential(name: str) -> bool:
    upper = name.upper()
    return upper in _ALWAYS_DROPPED or upper.startswith("ACTIONS_") or bool(_SECRET_WORDS.search(upper))


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
        upper = name.upper()
        if upper in _ALWAYS_DROPPED or upper.startswith("ACTIONS_"):
            continue
        if is_credential(name) and upper not in allowed:
            continue
        env[name] = value
    if extra:
        env.update(extra)
    return env
