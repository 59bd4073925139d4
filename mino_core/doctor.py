"""``mino doctor``: is everything mino needs here and working? One line per check, each
``ok``, ``warn`` or ``FAIL``, and what to do where it is not ok; exit 1 when any fails.

Checks, in order: the home folder and config.yaml (against every schema); a model service
configured; the server reachable (``GET /models``, 5 s); the model known to it; its
context window; each plugin's status and notes (the sandbox, the memory backend); the
memory backend chosen. Nothing is sent to the model. Only click at import time: the CLI
imports this for every command.
"""
from __future__ import annotations

import click


class _Report:
    def __init__(self):
        self.failed = 0

    def line(self, status: str, what: str, detail: str) -> None:
        from .confirm import visible

        if status == "FAIL":
            self.failed += 1
        click.echo(visible(f"{status:<4}  {what}: {detail}", lines=True))


def _reachable(settings) -> tuple[str, str, list[str]]:
    """(status, detail, model ids) for ``GET {base_url}/models``."""
    import json
    import urllib.error
    import urllib.request

    url = settings.base_url.rstrip("/") + "/models"
    handlers = [urllib.request.ProxyHandler({})] if url.startswith("http://") else []
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {settings.api_key}",
                                                   "Accept": "application/json"})
    try:
        with opener.open(request, timeout=5) as response:
            data = json.loads(response.read(4 << 20) or b"null")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return "FAIL", f"{url} answered HTTP {exc.code}: the key is refused (OPENAI_API_KEY or api_key)", []
        return "warn", f"{url} answered HTTP {exc.code} (it may still serve requests)", []
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return "FAIL", (f"cannot reach {settings.base_url} ({reason}). Is the server running, and "
                        "is base_url (MINO_BASE_URL) right?"), []
    entries = data.get("data") if isinstance(data, dict) else None
    names = sorted(str(e["id"]) for e in entries or [] if isinstance(e, dict) and e.get("id"))
    return "ok", f"{settings.base_url} answers ({len(names)} model(s) listed)", names


@click.command("doctor")
def doctor_command():
    """Check the home, config, model server, model, sandbox, memory and every plugin."""
    import sys

    from .config import ConfigError, home_dir, model_settings, project_root
    from .invocation import command

    report = _Report()
    home = home_dir()
    try:
        from .startup import checked_host

        warnings: list[str] = []
        host, context = checked_host(home, project_root(), warnings.append)
    except ConfigError as exc:
        report.line("FAIL", "home and config", str(exc).replace("\n", "; "))
        sys.exit(1)
    report.line("ok", "home", str(home))
    if warnings:
        for warning in warnings:
            report.line("warn", "config.yaml", warning)
    else:
        report.line("ok", "config.yaml", "valid" if (home / "config.yaml").exists() else "none (defaults)")
    try:
        settings = model_settings(context.config)
    except ConfigError as exc:
        report.line("FAIL", "model service", str(exc))
        settings = None
    if settings is not None:
        status, detail, names = _reachable(settings)
        report.line(status, "server", detail)
        if names and settings.model in names:
            report.line("ok", "model", f"{settings.model} is listed by the server")
        elif names:
            shown = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
            report.line("warn", "model", f"{settings.model} is not listed by the server (it lists "
                                         f"{shown}); choose one with {command('-m NAME')}")
        elif status == "ok":
            report.line("ok", "model", f"{settings.model} (the server lists no models to check against)")
        if status == "ok":
            from .context_window import probe

            window = context.config.get("context_window") or probe(settings)
            report.line("ok", "context window", f"{window:,} tokens" if window else
                        "not published by the server; compaction assumes 128,000 tokens "
                        "(set context_window in config.yaml)")
    try:
        host.collect_tools()
        notes = {name: [str(n) for n in found] for name, found in host.call("plugin_notes", context=context)}
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is what doctor reports
        report.line("FAIL", "plugins", f"collecting tools failed: {type(exc).__name__}: {exc}")
        notes = {}
    for info in host.plugins.values():
        status = "ok" if info.status == "loaded" else \
            "ok" if info.status == "inactive" else "warn" if info.status == "disabled" else "FAIL"
        detail = f"{info.distribution} {info.version} [{info.status}]"
        if info.error:
            detail += f": {info.error}"
        report.line(status, f"plugin {info.name}", detail)
        for note in notes.get(info.name, []) + list(info.notes):
            report.line("warn" if "not" in note.lower() and "sandbox" in note.lower() else "ok",
                        f"  {info.name}", note)
    report.line("ok" if host.backend else "warn", "memory",
                f"backend {host.backend or 'none'} ({host.backend_reason})")
    for error in host.errors:
        report.line("FAIL", "plugins", error)
    click.echo(f"\n{report.failed} problem(s)." if report.failed else "\nAll checks passed.")
    sys.exit(1 if report.failed else 0)
