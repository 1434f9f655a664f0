"""The environment a command gets: an allowlist, never the host's secrets."""

from __future__ import annotations

from pathlib import Path

from toolcards.sandbox import LocalOptions
from toolcards.sandbox._environment import sandbox_env
from toolcards.sandbox._local import local_path_env

HOST = {
    "PATH": "/usr/bin",
    "LANG": "en_US.UTF-8",
    "OPENAI_API_KEY": "sk-secret",
    "GITHUB_TOKEN": "ghp_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "CI_FLAG": "1",
}


def test_secrets_and_unknown_variables_stay_out() -> None:
    env = sandbox_env(home="/ws", path="/bin", options=LocalOptions(), host_env=HOST)
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "CI_FLAG"} & set(env)
    assert "secret" not in " ".join(env.values())


def test_home_path_and_locale_are_set() -> None:
    env = sandbox_env(home="/ws", path="/bin", options=LocalOptions(), host_env=HOST, tmpdir="/tmp")
    assert env["HOME"] == "/ws" and env["PATH"] == "/bin" and env["TMPDIR"] == "/tmp"
    assert env["LANG"] == "en_US.UTF-8"


def test_pass_env_and_explicit_env_are_opt_in() -> None:
    options = LocalOptions(pass_env=("CI_FLAG",), env={"PYTHONHASHSEED": "0"})
    env = sandbox_env(home="/ws", path="/bin", options=options, host_env=HOST)
    assert env["CI_FLAG"] == "1" and env["PYTHONHASHSEED"] == "0"


def test_workspace_venv_comes_first_on_path(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    assert local_path_env(tmp_path).split(":")[0] == str(tmp_path / ".venv" / "bin")
