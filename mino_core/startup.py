"""What happens before a session starts, for ``mino`` and ``mino -p`` alike: the home
folder checked, config.yaml checked against the core's and the plugins' schemas, the
plugin host built on the checked configuration, ``--allow`` rules added for this run, and
the banner (model, server, project)."""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .config import ConfigError, ensure_home, load_config


def allow_rules(texts) -> list[str]:
    """``--allow TOOL`` / ``--allow 'TOOL(pattern)'`` values, checked; ConfigError on a bad one."""
    import re

    rules = []
    for text in texts or ():
        text = str(text).strip()
        if not re.fullmatch(r"[\w.*?\[\]-]+(\(.*\))?", text, re.S):
            raise ConfigError(f"--allow {text!r}: not a rule; write TOOL or TOOL(pattern), "
                              "for example --allow 'Bash(git status*)' or --allow read_file.")
        rules.append(text)
    return rules


def _with_allow(config: dict[str, Any], rules: list[str]) -> None:
    if not rules:
        return
    section = config.get("permissions")
    section = dict(section) if isinstance(section, dict) else {}
    have = section.get("allow") or []
    have = [have] if isinstance(have, str) else list(have)
    section["allow"] = have + rules
    config["permissions"] = section


def checked_host(home: Path, project_root: Path, notice, allow=()):
    """The plugin host, on config.yaml checked against the core's and the plugins' schemas.

    Warnings go to ``notice``; any error (a core key with a wrong value, a home folder mino
    cannot use) raises ConfigError whose message is every problem, one per line. The host's
    ``context.config`` is the checked configuration (``--allow`` rules added)."""
    from .backends import check_folders
    from .config_schema import check, core_schema, plugin_schemas
    from .plugins import PluginContext, build_host

    rules = allow_rules(allow)
    ensure_home(home)
    raw = load_config(home)
    config: dict[str, Any] = {}
    context = PluginContext(home=home, project_root=project_root, config=config)
    config.update(raw)  # what plugins see while they declare their schemas
    host = build_host(context).shutdown_at_exit()  # host_shutdown however the process ends
    check_folders(home, host.backends)
    cleaned, report = check(raw, home / "config.yaml", plugin_schemas(host),
                            core=core_schema(list(host.backends), _apis(host, raw)))
    if report.errors:
        raise ConfigError("\n".join(report.lines()))
    for line in report.lines():
        notice(line)
    config.clear()
    config.update(cleaned)  # the same dict the host's context holds: plugins see defaults
    _with_allow(config, rules)
    return host, context


def _apis(host, raw: dict[str, Any]) -> list[str] | None:
    """The registered model APIs' names, asked of the plugins only when config.yaml names
    one the core does not have (so start-up imports no plugin's adapter otherwise)."""
    from .config_schema import CORE_APIS

    wanted = raw.get("api")
    if wanted is None or str(wanted).strip().lower() in CORE_APIS:
        return None
    return list(host.model_apis())


def start_agent(home: Path, project_root: Path, ui, verbose: bool = False, *, allow=(),
                make_client=None, banner: bool = False):
    """The Agent, on a checked configuration (``checked_host``); warnings go to
    ``ui.notice``. ``make_client(settings)``: the model client (default: ``ModelClient``)."""
    from .agent import Agent

    host, context = checked_host(home, project_root, ui.notice, allow)
    client = None
    if make_client is not None:
        from .config import model_settings

        client = make_client(model_settings(context.config))
    agent = Agent(home=home, project_root=project_root, ui=ui, config=context.config, host=host,
                  client=client, verbose=verbose)
    if banner:
        ui.line(banner_line(agent))
    return agent


def banner_line(agent) -> str:
    settings = agent.client.settings
    server = urlsplit(settings.base_url).netloc or settings.base_url
    return f"mino {_version()}: model {settings.model} at {server}, project {agent.project_root}"


def _version() -> str:
    # entry_points.py reads the dist-info as plugin loading does: importing
    # importlib.metadata for the banner cost 35-40 ms before the first prompt.
    from .entry_points import version

    return version("mino-core") or "(version unknown)"
