"""The agents the supervisor benchmark runs, each as a user sets it up (docs/coding-agents.md,
"what a user sets"; the same as the e2e suites' worlds in tests/*_acp_e2e.rs): its command
line, the settings written into a HOME of its own, and the variables its jobs get in `[agent]
env`. Besides the four real ACP agents: a tiny ACP agent (fake_agent.py, run as a program named
`gemini`) and a plain agent (`sleep`) whose supervisor only waits.
"""
import json
import os
import sys
from dataclasses import dataclass, field

from . import fake_llm

# Where CI installs each pinned agent (.ci/run): <cache>/<name>-<version>/node_modules/.bin/<name>.
CACHE = os.environ.get("LUZIA_CI_CACHE", "/root/.cache/luzia-ci")
PINNED = {"gemini": ("gemini-0.61.0", "gemini"), "qwen": ("qwen-0.15.10", "qwen"),
          "opencode": ("opencode-1.18.33", "opencode"), "codex": ("codex-acp-0.16.0", "codex-acp")}
REAL = ("gemini", "qwen", "opencode", "codex")


@dataclass
class Agent:
    """One row of the benchmark: how its jobs are started."""
    name: str
    # `[agent] kind` (None: a plain `[agent] command`).
    kind: str | None
    command: list
    env: dict = field(default_factory=dict)
    # What the job shows once it is where it is measured: a gate's file, or just its pid.
    wait_for: str = "approval.json"


def program(name):
    """The pinned agent's program, else None (it is then left out, saying so)."""
    directory, binary = PINNED[name]
    path = os.path.join(CACHE, directory, "node_modules", ".bin", binary)
    return path if os.path.isfile(path) else None


def plain():
    return Agent("plain (sleep)", None, ["sh", "-c", "exec sleep 600"], wait_for="pid")


def fake(bindir):
    """The tiny ACP agent, named `gemini` so that luzia drives it as Gemini CLI."""
    me = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_agent.py")
    path = os.path.join(bindir, "gemini")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {me}\n")
    os.chmod(path, 0o755)
    return Agent("fake ACP agent", "gemini", [path, "--acp"])


def real(name, path, home, llm_url):
    """A real agent pointed at the fake model API at `llm_url`, its settings in `home`."""
    setup = {"gemini": _gemini, "qwen": _qwen, "opencode": _opencode, "codex": _codex}[name]
    command, env = setup(path, home, llm_url)
    return Agent(name, name, command, dict(env, HOME=home))


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _gemini(path, home, url):
    # Without the kind of login `gemini --acp` refuses the session.
    _write(f"{home}/.gemini/settings.json",
           json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    return [path, "--acp"], {"GEMINI_API_KEY": "fake", "GOOGLE_GEMINI_BASE_URL": url}


def _qwen(path, home, url):
    # `default`: Qwen Code asks before any command runs.
    _write(f"{home}/.qwen/settings.json",
           json.dumps({"security": {"auth": {"selectedType": "openai"}},
                       "tools": {"approvalMode": "default"}}))
    return [path, "--acp"], {"OPENAI_API_KEY": fake_llm.KEY, "OPENAI_BASE_URL": f"{url}/v1",
                             "OPENAI_MODEL": fake_llm.MODEL}


def _opencode(path, home, url):
    # The provider, the model's price and context (so that opencode sends its cost), and that
    # `bash` asks first (it runs without asking otherwise).
    model = {"name": "Fake model", "cost": {"input": 3.0, "output": 15.0},
             "limit": {"context": 100000, "output": 8000}}
    config = {"$schema": "https://opencode.ai/config.json",
              "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                    "options": {"baseURL": f"{url}/v1", "apiKey": fake_llm.KEY},
                                    "models": {fake_llm.MODEL: model}}},
              "model": f"fake/{fake_llm.MODEL}", "permission": {"bash": "ask"}}
    _write(f"{home}/.config/opencode/opencode.json", json.dumps(config))
    return [path, "acp"], {"XDG_CONFIG_HOME": f"{home}/.config",
                           "XDG_DATA_HOME": f"{home}/.local/share",
                           # Its list of models is fetched from models.dev otherwise, and
                           # itself updated.
                           "OPENCODE_DISABLE_MODELS_FETCH": "1",
                           "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def _codex(path, home, url):
    # `untrusted`: ask before any command but a few read-only ones; no sandbox (it needs
    # bubblewrap), the gate being the check.
    _write(f"{home}/.codex/config.toml",
           'approval_policy = "untrusted"\nsandbox_mode = "danger-full-access"\n'
           f'model = "{fake_llm.MODEL}"\nmodel_provider = "fake"\n\n'
           f'[model_providers.fake]\nname = "fake"\nbase_url = "{url}/v1"\n'
           'env_key = "FAKE_API_KEY"\nwire_api = "responses"\n')
    return [path], {"FAKE_API_KEY": fake_llm.KEY}
