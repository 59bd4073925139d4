"""Which model a session talks to: ``-m/--model NAME`` at start, ``/model [NAME]`` in the
REPL. ``/model`` alone names the model and server and lists the models the server offers
(``GET /models``, where it answers); ``/model NAME`` switches from the next request on,
and the session log records the switch (``{"type": "model"}``). Reasoning a model wrote is
re-sent only to that model (``via``), so a switch never sends another model's."""
from __future__ import annotations

import json

LISTED = 30  # models shown by /model


def served_models(settings) -> list[str]:
    """The model ids the server lists, or [] (no listing, not reachable)."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}) if
                                         settings.base_url.startswith("http://") else
                                         urllib.request.BaseHandler())
    request = urllib.request.Request(settings.base_url.rstrip("/") + "/models", headers={
        "Authorization": f"Bearer {settings.api_key}", "Accept": "application/json"})
    try:
        with opener.open(request, timeout=5) as response:
            data = json.loads(response.read(4 << 20) or b"null")
    except Exception:  # noqa: BLE001 - a listing is a courtesy: nothing shown without one
        return []
    entries = data.get("data") if isinstance(data, dict) else None
    return sorted(str(e["id"]) for e in entries or [] if isinstance(e, dict) and e.get("id"))


def model_command(agent, arg: str) -> None:
    ui, settings = agent.ui, agent.client.settings
    if not arg:
        ui.line(f"Model: {settings.model} at {settings.base_url}")
        names = served_models(settings)
        if names:
            shown = ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
            ui.line(f"The server offers: {shown}. Switch with /model NAME.")
        return
    name = arg.split()[0]
    names = served_models(settings)
    settings.model = name
    agent.session.log.append({"type": "model", "model": name})
    agent.client.configure(agent.config)  # that model's own limits (models: {NAME: ...})
    unknown = f" (the server does not list it: {', '.join(names[:10])})" if names and name not in names else ""
    ui.line(f"Model: {name} from the next message on{unknown}.")
