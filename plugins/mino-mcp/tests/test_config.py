"""Reading the mcp: section: the shapes Claude Code and Codex users already write."""
from mino_mcp import config, names


def read(servers, environ=None, **section):
    return config.read({"mcp": {"servers": servers, **section}}, environ or {})


def test_claude_code_shape_with_expansion():
    s = read({"fs": {"type": "stdio", "command": "npx", "args": ["-y", "server-fs", "${ROOT}"],
                     "env": {"DEBUG": "${DEBUG:-false}", "KEY": "${KEY}"}},
              "api": {"type": "http", "url": "https://example.com/${P}/mcp",
                      "headers": {"Authorization": "Bearer ${TOKEN}"}}},
             {"ROOT": "/srv", "TOKEN": "t0k", "P": "v1"})
    assert not s.problems
    fs, api = s.servers["fs"], s.servers["api"]
    assert fs.transport == "stdio" and fs.command == ("npx", "-y", "server-fs", "/srv")
    assert dict(fs.env) == {"DEBUG": "false", "KEY": ""}
    assert api.transport == "http" and api.url == "https://example.com/v1/mcp"
    assert dict(api.headers) == {"Authorization": "Bearer t0k"}


def test_codex_shape():
    s = read({"docs": {"command": "uvx", "args": ["docs-mcp"], "startup_timeout_sec": 20,
                       "tool_timeout_sec": 5, "enabled_tools": ["search"], "cwd": "/tmp"},
              "off": {"command": "x", "enabled": False},
              "remote": {"url": "http://127.0.0.1:9/mcp", "bearer_token_env_var": "TK",
                         "http_headers": {"X-Team": "a"}}},
             {"TK": "abc"})
    assert not s.problems and set(s.servers) == {"docs", "remote"}
    docs = s.servers["docs"]
    assert (docs.startup_timeout, docs.tool_timeout, docs.cwd) == (20.0, 5.0, "/tmp")
    assert docs.offers("search") and not docs.offers("fetch")
    assert dict(s.servers["remote"].headers) == {"Authorization": "Bearer abc", "X-Team": "a"}


def test_mino_shape_command_list_and_switches():
    s = read({"git": {"command": ["python", "-m", "gitserver"], "start": "session",
                      "sandbox": False, "network": True}})
    git = s.servers["git"]
    assert git.command == ("python", "-m", "gitserver") and git.start == "session"
    assert git.sandbox is False and git.network is True
    # stdio servers are sandboxed unless config says otherwise
    assert read({"a": {"command": "x"}}).servers["a"].sandbox is True
    assert read({"a": {"command": "x"}}, sandbox=False).servers["a"].sandbox is False


def test_a_wrong_server_is_left_out_with_one_line_and_the_others_stay():
    s = read({"good": {"command": "x"}, "bad name": {"command": "x"}, "nocmd": {"args": []},
              "sse": {"type": "sse", "url": "https://x/sse"}, "slow": {"command": "x",
              "tool_timeout_sec": "soon"}, "tok": {"url": "https://x", "bearer_token_env_var": "NOPE"},
              "ftp": {"url": "ftp://x"}})
    assert set(s.servers) == {"good"}
    text = "\n".join(s.problems)
    for name in ("bad name", "nocmd", "sse", "slow", "tok", "ftp"):
        assert f"MCP server {name!r} left out" in text
    assert "SSE transport is not supported" in text and "NOPE, which is not set" in text


def test_not_a_mapping():
    assert config.read({"mcp": ["x"]}).problems
    assert config.read({}).servers == {}


def test_fingerprint_changes_with_the_launch_not_with_timeouts():
    a = read({"s": {"command": "x", "args": ["1"]}}).servers["s"]
    b = read({"s": {"command": "x", "args": ["2"]}}).servers["s"]
    c = read({"s": {"command": "x", "args": ["1"], "tool_timeout_sec": 3}}).servers["s"]
    assert a.fingerprint() != b.fingerprint() and a.fingerprint() == c.fingerprint()


def test_where_shows_no_secret_part_of_a_url():
    s = read({"api": {"url": "https://user:pw@example.com:8443/mcp?key=abc"}})
    assert s.servers["api"].where() == "https://example.com:8443/mcp"


def test_tool_names():
    assert names.tool_name("gh", "get_issue") == "mcp__gh__get_issue"
    assert names.tool_name("gh", "repo.list/all") == "mcp__gh__repo_list_all"
    long_a, long_b = names.tool_name("gh", "x" * 100 + "a"), names.tool_name("gh", "x" * 100 + "b")
    assert len(long_a) == 64 and long_a != long_b


def test_the_schema_mino_checks_at_start_matches_the_defaults():
    from mino_mcp import plugin

    section = plugin.config_schema(None)["mcp"]["properties"]
    assert section["output_cap"]["default"] == config.DEFAULT_OUTPUT_CAP
