"""`tjui config`, `tjui summarize`, `tjui review` and the provider configuration.

Provider calls go to a tiny scripted HTTP server on 127.0.0.1 started by the tests.
TJUI_CONFIG points at a file in tmp_path (tests/conftest.py), so the user's real
configuration is never read.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
import pytest
from builders import claude_code_with_secrets, secret_fragments
from click.testing import CliRunner

from tinyjuice.providers import AnthropicProvider, OpenAICompatProvider, ProviderKind
from tjui.commands.summaries import config_cmd, resolve_provider, review_cmd, summarize_cmd
from tjui.config import (
    ConfigError,
    Overrides,
    config_path,
    effective_config,
    resolve_provider_config,
)

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
KEY_VAR = "TJ_CLI_TEST_KEY"
KEY = "sk-" + "proj-" + "Wv5" * 14


def invoke(cmd: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cmd, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "TJUI_PROVIDER",
        "TJUI_PROVIDER_KIND",
        "TJUI_BASE_URL",
        "TJUI_MODEL",
        "TJUI_API_KEY_ENV",
        "TJUI_TIMEOUT",
        "TJUI_FALLBACK_MODEL",
        "ANTHROPIC_API_KEY",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def cfg_file() -> Path:
    return Path(os.environ["TJUI_CONFIG"])


def write_config(path: Path, base_url: str = "http://127.0.0.1:9/v1", extra: str = "") -> None:
    path.write_text(
        'default_provider = "local"\n'
        "\n"
        "[providers.local]\n"
        'kind = "openai"\n'
        f'base_url = "{base_url}"\n'
        'model = "qwen3-32b"\n'
        f'api_key_env = "{KEY_VAR}"\n'
        "timeout = 5\n"
        'fallback_model = "qwen3-8b"\n'
        "\n"
        "[providers.claude]\n"
        'kind = "anthropic"\n'
        'model = "claude-sonnet"\n'
        'api_key_env = "ANTHROPIC_API_KEY"\n' + extra
    )


# ---------------------------------------------------------------------- local server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.bodies.append(body)
        self.server.headers.append({k.lower(): v for k, v in self.headers.items()})
        status, payload = self.server.replies.pop(0)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.bodies, srv.headers, srv.replies = [], [], []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def completion(text: str) -> tuple[int, dict[str, Any]]:
    return 200, {"model": "qwen3-32b", "choices": [{"message": {"content": text}, "finish_reason": "stop"}]}  # fmt: skip


# -------------------------------------------------------------------------- config


def test_config_without_a_file_uses_the_fallback(cfg_file: Path) -> None:
    code, out, _ = invoke(config_cmd)
    assert code == 0
    assert str(cfg_file) in out and "not found" in out
    assert "fallback (deterministic summary, no model)" in out
    assert "No providers configured" in out
    code, out, _ = invoke(config_cmd, "--json")
    data = json.loads(out)
    assert data["config_file"] == {
        "path": str(cfg_file),
        "source": "env TJUI_CONFIG",
        "exists": False,
    }
    assert data["provider"] == {"value": None, "source": "unset"}


def test_default_config_location_is_the_platform_config_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platformdirs

    monkeypatch.delenv("TJUI_CONFIG")
    path, source = config_path()
    assert path == platformdirs.user_config_path("tjui") / "config.toml"
    assert source == "default location"


def test_config_shows_values_sources_and_precedence(
    cfg_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(cfg_file)
    monkeypatch.setenv("TJUI_MODEL", "env-model")
    monkeypatch.setenv("TJUI_TIMEOUT", "12")
    monkeypatch.setenv(KEY_VAR, KEY)
    code, out, _ = invoke(config_cmd, "--json", "--model", "flag-model")
    assert code == 0
    data = json.loads(out)
    assert data["provider"] == {"value": "local", "source": "file (default_provider)"}
    local = data["providers"]["local"]
    assert local["selected"] is True
    assert local["model"] == {"value": "flag-model", "source": "flag --model"}  # flag > env
    assert local["timeout"] == {"value": 12.0, "source": "env TJUI_TIMEOUT"}  # env > file
    assert local["base_url"] == {"value": "http://127.0.0.1:9/v1", "source": "file"}
    assert local["kind"] == {"value": "openai", "source": "file"}
    assert local["api_key_env"] == {"value": KEY_VAR, "source": "file"}
    assert local["api_key"] == {"value": "set (hidden)", "source": f"env {KEY_VAR}"}
    # Overrides apply to the selected provider only; defaults are labelled.
    claude = data["providers"]["claude"]
    assert claude["selected"] is False
    assert claude["model"] == {"value": "claude-sonnet", "source": "file"}
    assert claude["base_url"] == {"value": "https://api.anthropic.com", "source": "default"}
    assert claude["timeout"] == {"value": 60.0, "source": "default"}
    assert KEY not in out
    # The text form says the same and never shows the key either.
    code, text, _ = invoke(config_cmd, "--provider", "claude")
    assert code == 0 and KEY not in text
    assert "[providers.claude]  (selected)" in text
    assert "claude  [flag --provider]" in text
    assert "NOT SET — export ANTHROPIC_API_KEY=<your key>" in text


def test_environment_selects_the_provider_and_flags_beat_it(
    cfg_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(cfg_file)
    monkeypatch.setenv("TJUI_PROVIDER", "claude")
    cfg = effective_config()
    assert cfg.selected is not None and cfg.selected.name == "claude"
    assert cfg.provider.source == "env TJUI_PROVIDER"
    cfg = effective_config(Overrides(provider="local"))
    assert cfg.selected is not None and cfg.selected.name == "local"
    assert effective_config(Overrides(provider="fallback")).selected is None


def test_ad_hoc_provider_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("TJUI_MODEL", "llama")
    monkeypatch.setenv("TJUI_PROVIDER_KIND", "anthropic")
    config = resolve_provider_config()
    assert config is not None
    assert (config.name, config.kind, config.model) == ("custom", ProviderKind.ANTHROPIC, "llama")
    assert config.api_key_env is None


def test_secrets_in_the_environment_are_masked(
    cfg_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pw = "hun" + "ter2" + "-secret"
    monkeypatch.setenv("TJUI_BASE_URL", f"https://user:{pw}@llm.example.com/v1")
    monkeypatch.setenv("TJUI_MODEL", "m")
    code, out, _ = invoke(config_cmd, "--json")
    assert code == 0 and pw not in out
    assert "[REDACTED:url_password]" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('default_provider = "local"\n[providers.local\nkind = "openai"\n', ":2: invalid TOML"),
        ("[providers.local]\nkind = \"openai\"\nmodel = \n", ":3: invalid TOML"),
        ('[providers.local]\nkind = "grok"\nmodel = "m"\n', 'kind must be "openai" or "anthropic"'),
        ('[providers.local]\nmodel = "m"\napi_key = "sk-abc"\n', "never put a key in the file"),
        ('[providers.local]\nmodel = "m"\nmodle = "x"\n', "unknown key 'modle'"),
        ('[providers.local]\nmodel = "m"\ntimeout = -1\n', "timeout must be a positive number"),
        ('[providers.local]\nmodel = "m"\nbase_url = "localhost:8080"\n', "must start with http"),
        ('[providers.local]\nmodel = "m"\napi_key_env = "sk-proj-' + "Ab1" * 12 + '"\n', "NAME of the variable"),
        ('default_provider = "nope"\n[providers.local]\nmodel = "m"\n', "configured: local"),
        ('[providers.fallback]\nmodel = "m"\n', "reserved"),
    ],
)  # fmt: skip
def test_malformed_config_is_one_clear_line(cfg_file: Path, content: str, expected: str) -> None:
    cfg_file.write_text(content)
    code, _, err = invoke(config_cmd)
    assert code == 2
    assert str(cfg_file) in err
    assert expected in err
    assert "Traceback" not in err
    assert "sk-abc" not in err


def test_unknown_provider_lists_the_configured_ones(cfg_file: Path) -> None:
    write_config(cfg_file)
    code, _, err = invoke(config_cmd, "--provider", "gpt")
    assert code == 2
    assert "unknown provider 'gpt'" in err and "configured: claude, local" in err
    cfg_file.unlink()
    code, _, err = invoke(summarize_cmd, str(SESSIONS / "openai-chat.json"), "--provider", "gpt")
    assert code == 2 and "no providers are configured" in err and "[providers.NAME]" in err


def test_bad_environment_values_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_TIMEOUT", "soon")
    monkeypatch.setenv("TJUI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TJUI_MODEL", "m")
    with pytest.raises(ConfigError, match="TJUI_TIMEOUT: timeout must be a number"):
        effective_config()


def test_missing_key_variable_says_which_to_set(cfg_file: Path) -> None:
    write_config(cfg_file)
    code, _, err = invoke(summarize_cmd, str(SESSIONS / "openai-chat.json"))
    assert code == 2
    assert f"${KEY_VAR}, which is not set; export {KEY_VAR}=<your key>" in err


def test_resolve_provider_for_compress(cfg_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(cfg_file)
    monkeypatch.setenv(KEY_VAR, KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    local = resolve_provider(None)
    assert isinstance(local, OpenAICompatProvider)
    assert (local.name, local.model, local.fallback_model, local.timeout) == (
        "local",
        "qwen3-32b",
        "qwen3-8b",
        5.0,
    )
    claude = resolve_provider("claude", model="claude-haiku")
    assert isinstance(claude, AnthropicProvider) and claude.model == "claude-haiku"
    assert resolve_provider("fallback") is None
    with pytest.raises(SystemExit) as exc:
        resolve_provider("missing")
    assert exc.value.code == 2


# ------------------------------------------------------------------------ summarize


def test_summarize_with_the_fallback_prints_summary_and_review() -> None:
    path = SESSIONS / "openai-chat.json"
    code, out, err = invoke(summarize_cmd, str(path), "--keep-last", "1")
    assert code == 0, err
    assert out.startswith("[CONTEXT COMPACTION — REFERENCE ONLY]")
    assert "── review: fallback summary of messages" in out
    assert "paths" in out and "checks:" in out and "no_secrets" in out
    code, out, err = invoke(summarize_cmd, str(path), "--keep-last", "1", "--json")
    data = json.loads(out)
    assert data["kind"] == "fallback" and data["provider"] is None
    assert data["summary"].startswith("[CONTEXT COMPACTION")
    review = data["review"]
    for cat in ("paths", "commands", "tools"):
        assert review["recall"][cat] == 1.0  # the fallback kept them all
    assert {c["name"] for c in review["checks"]} == {
        "wrapper",
        "budget",
        "no_secrets",
        "no_fresh_request",
    }
    assert all(c["ok"] is not False for c in review["checks"])
    assert data["boundary"]["start"] < data["boundary"]["end"]


def test_summarize_json_shows_no_secret_of_the_summarised_middle(tmp_path: Path) -> None:
    """Secrets in the source records and the text of messages the summary replaces
    leave through neither the summary, its appendix nor the review."""
    path = tmp_path / "secrets.jsonl"
    secrets = claude_code_with_secrets(path)
    code, out, err = invoke(summarize_cmd, str(path), "--whole-file", "--keep-last", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kind"] == "fallback" and data["boundary"]["start"] <= 8
    for secret in secrets.values():
        for fragment in secret_fragments(secret):
            assert fragment not in out
    assert "hunter2Secr3tPw" not in out


def test_summarize_with_a_provider_sends_focus_and_reviews_the_answer(
    cfg_file: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(cfg_file, base_url=server.base + "/v1")
    monkeypatch.setenv(KEY_VAR, KEY)
    answer = "## Relevant Files\n- src/app/payments/webhooks.py\n## Goal\nFix the webhook retries."
    server.replies.append(completion(answer))
    code, out, err = invoke(
        summarize_cmd,
        str(SESSIONS / "openai-chat.json"),
        "--at",
        "20",
        "--focus",
        "webhook retries",
        "--json",
    )
    assert code == 0, err
    sent = json.loads(server.bodies[0])
    assert sent["model"] == "qwen3-32b"
    assert 'Focus topic: "webhook retries"' in sent["messages"][1]["content"]
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    data = json.loads(out)
    assert data["kind"] == "llm" and data["provider"] == "local"
    assert "Fix the webhook retries." in data["summary"]
    review = data["review"]
    assert review["total"]["paths"] > review["found"].get("paths", 0)  # it kept few paths
    assert all(isinstance(m["index"], int) for m in review["missing"]["paths"])
    assert KEY not in out + err
    # Never written to disk: the config file holds only the variable's name.
    assert KEY not in cfg_file.read_text()


def test_summarize_auth_failure_changes_nothing_and_exits_1(
    cfg_file: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(cfg_file, base_url=server.base + "/v1")
    monkeypatch.setenv(KEY_VAR, KEY)
    server.replies.append((401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    path = SESSIONS / "openai-chat.json"
    before = path.read_bytes()
    code, out, err = invoke(summarize_cmd, str(path), "--keep-last", "1")
    assert code == 1
    assert "no summary [auth]" in err and "nothing was changed" in err
    assert KEY not in out + err
    assert path.read_bytes() == before
    server.replies.append((401, {"error": {"message": "bad key"}}))
    code, out, _ = invoke(summarize_cmd, str(path), "--keep-last", "1", "--json")
    data = json.loads(out)
    assert code == 1
    assert (data["status"], data["failure_class"], data["summary"]) == ("aborted", "auth", None)


def test_summarize_rejects_both_boundaries() -> None:
    code, _, err = invoke(
        summarize_cmd, str(SESSIONS / "demo.json"), "--keep-last", "1", "--at", "3"
    )
    assert code == 2 and "either --keep-last or --at" in err


# --------------------------------------------------------------------------- review


def test_review_json_one_object_per_past_compaction() -> None:
    code, out, err = invoke(review_cmd, str(SESSIONS / "claude-code.jsonl"), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [d["index"] for d in data] == [43, 65]
    for d in data:
        assert set(d) >= {"index", "recall", "missing", "checks", "span", "trigger"}
        assert all(0.0 <= v <= 1.0 for v in d["recall"].values())
        for items in d["missing"].values():
            assert all(d["span"][0] <= i["index"] < d["index"] for i in items)
    assert data[0]["trigger"] == "auto" and data[1]["trigger"] == "manual"


def test_review_text_scorecards() -> None:
    code, out, _ = invoke(review_cmd, str(SESSIONS / "claude-code.jsonl"))
    assert code == 0
    assert "compaction 1 of 2: summary at message 43 (auto" in out
    assert "reviewed against messages 0–42" in out
    assert "compaction 2 of 2: summary at message 65" in out
    assert out.count("checks:") == 2
    code, out, _ = invoke(review_cmd, str(SESSIONS / "codex-rollout.jsonl"), "--json")
    assert code == 0 and len(json.loads(out)) == 1


def test_review_without_summaries() -> None:
    path = SESSIONS / "openai-chat.json"
    code, out, _ = invoke(review_cmd, str(path))
    assert code == 0 and "no compaction summaries found" in out
    code, out, _ = invoke(review_cmd, str(path), "--json")
    assert json.loads(out) == []


def test_review_bad_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    code, _, err = invoke(review_cmd, str(bad))
    assert code == 2 and "bad.json" in err and "Traceback" not in err


def test_summarize_nothing_to_compress_is_not_an_error() -> None:
    path = str(SESSIONS / "openai-chat.json")
    code, out, err = invoke(summarize_cmd, path, "--keep-last", "100")
    assert code == 0, err
    assert out.startswith("nothing to summarise (noop): ")
    assert "leaves nothing to compress" in out
    code, out, err = invoke(summarize_cmd, path, "--keep-last", "100", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["status"], data["summary"], data["failure_class"]) == ("noop", None, None)


def test_review_text_lists_probes_rules_and_background() -> None:
    code, out, _ = invoke(review_cmd, str(SESSIONS / "claude-code.jsonl"))
    assert code == 0
    assert out.count("probes (answered from the summary):") == 2
    assert "rules: LOST 1 of" in out
    assert "lost user          #0     Keep the public method signatures of PaymentsClient." in out
    assert "unanswered   #" in out


def test_review_judge_asks_a_configured_provider(
    cfg_file: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(cfg_file, base_url=server.base + "/v1")
    monkeypatch.setenv(KEY_VAR, KEY)
    path = str(SESSIONS / "claude-code.jsonl")
    _, plain, _ = invoke(review_cmd, path, "--json")
    asked = [len(d["probes"]["probes"]) for d in json.loads(plain)]
    for n in asked:
        server.replies.append(completion(json.dumps(["unknown"] * n)))
    code, out, err = invoke(review_cmd, path, "--judge", "local", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert len(server.bodies) == len(asked)
    sent = json.loads(server.bodies[0])
    assert "<summary>" in sent["messages"][1]["content"]
    assert KEY not in server.bodies[0].decode()
    for d in data:
        assert d["probes"]["judge"] == "local" and d["probes"]["judge_error"] is None
        assert d["probes"]["overall"] == 0.0  # "unknown" is never an answer
        assert all(p["answer"] == "unknown" for p in d["probes"]["probes"])
    # The text form says who answered.
    for n in asked:
        server.replies.append(completion(json.dumps(["unknown"] * n)))
    code, out, _ = invoke(review_cmd, path, "--judge", "local")
    assert code == 0 and "probes (judge local):" in out


def test_review_judge_unknown_provider_is_a_usage_error(cfg_file: Path) -> None:
    write_config(cfg_file)
    code, _, err = invoke(review_cmd, str(SESSIONS / "claude-code.jsonl"), "--judge", "nope")
    assert code == 2 and "nope" in err and "Traceback" not in err
    code, _, err = invoke(review_cmd, str(SESSIONS / "claude-code.jsonl"), "--judge", "fallback")
    assert code == 2 and "no model" in err


def test_summarize_json_carries_the_appendix_the_summary_names() -> None:
    code, out, err = invoke(
        summarize_cmd, str(SESSIONS / "demo.json"), "--keep-last", "1", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["omitted"]  # the demo's middle does not fit the fallback's budget
    appendix = data["appendix"]
    assert f"appendix sha256:{appendix['id']}" in data["summary"]
    assert appendix["text"].startswith("# Appendix to the fallback summary")
    from tinyjuice.redact import find_secrets

    assert find_secrets(appendix["text"]) == []  # redacted like the summary
    code, out, _ = invoke(
        summarize_cmd, str(SESSIONS / "openai-chat.json"), "--keep-last", "1", "--json"
    )
    assert json.loads(out)["appendix"] is None  # nothing left out, no appendix
