"""The plugin host: find plugins, load each on its own, and call their hooks safely.

pluggy's own entry-point loader lets one import error escape and stop everything, and an
exception in one hook implementation stops the rest of that call. So the host iterates
entry points itself (filtering by MINO_PLUGINS / MINO_DISABLE_PLUGINS before importing),
records each plugin's status, and calls hooks through pluggy's own call loop with every
plain implementation wrapped in its own error handling: ``tryfirst``/``trylast`` and
wrappers (``wrapper=True``, old-style ``hookwrapper=True``) behave as pluggy documents,
and one failing plugin never silences another. Within each of pluggy's order classes,
implementations run in plugin-name order, so the order does not depend on what else is
installed. ``MINO_STRICT_PLUGINS=1`` re-raises instead, for plugin authors and CI;
``MINO_TRACE_PLUGINS=1`` logs every hook call.
"""
from __future__ import annotations

import copy
import functools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

import pluggy

from . import entry_points as _entry_points
from . import hookspecs
from .logs import get_logger
from .tools import Tool

GROUP = "mino"
log = get_logger("plugins")


@dataclass
class PluginContext:
    """What plugins learn about where they run, at registration time."""

    home: Path
    project_root: Path
    config: dict[str, Any]
    # What plugins declared through ``protected_paths`` (ProtectedPath items), once the
    # host collected it (``Host.protected_paths``); empty before that.
    protected: tuple = ()

    def section(self, name: str) -> dict[str, Any]:
        value = self.config.get(name)
        return value if isinstance(value, dict) else {}


@dataclass
class PluginInfo:
    name: str
    distribution: str = ""
    version: str = ""
    module: str = ""
    # loaded | disabled | failed | inactive (a memory backend that was not chosen)
    status: str = "loaded"
    error: str = ""
    hooks: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    backend: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "distribution": self.distribution, "version": self.version,
            "module": self.module, "status": self.status, "error": self.error,
            "hooks": self.hooks, "tools": self.tools, "memory_backend": self.backend,
            "notes": self.notes,
        }


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def strict() -> bool:
    return os.environ.get("MINO_STRICT_PLUGINS", "").lower() in ("1", "true", "yes", "on")


def _tracing() -> bool:
    return os.environ.get("MINO_TRACE_PLUGINS", "").lower() in ("1", "true", "yes", "on")


def _short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Host:
    """A fresh plugin manager plus what the host learned while loading it."""

    def __init__(self, context: PluginContext):
        self.context = context
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.errors: list[str] = []
        self._tools: dict[str, Tool] | None = None
        self._tools_lock = threading.Lock()
        self.backend: str | None = None
        self.backend_reason = "no memory backend is installed"
        self._inactive: set[str] = set()
        self._protected: tuple | None = None

    # -- loading -------------------------------------------------------------

    def register(self, name: str, module: Any, *, distribution: str = "mino-core",
                 version: str = "") -> None:
        """Register an in-process plugin (the core's own, or a test's) under ``name``."""
        allow, deny = _env_list("MINO_PLUGINS"), _env_list("MINO_DISABLE_PLUGINS") or set()
        info = PluginInfo(name, distribution, version or _core_version(), _module_name(module))
        self.plugins[name] = info
        if name in deny or (allow is not None and name not in allow):
            info.status = "disabled"
            return
        self.pm.register(module, name=name)
        self._check_hooks(name, module)
        info.hooks = sorted(h.name for h in self.pm.get_hookcallers(module) or [])

    def _check_hooks(self, name: str, module: Any) -> None:
        """Refuse an implementation of a hook mino does not have (a typo would otherwise be
        silently never called): unregister the plugin and raise one line naming it."""
        unknown = sorted(h.name for h in self.pm.get_hookcallers(module) or []
                         if h.spec is None and not all(i.optionalhook for i in h.get_hookimpls()
                                                       if i.plugin_name == name))
        if unknown:
            self.pm.unregister(module, name=name)
            raise pluggy.PluginValidationError(
                module, f"plugin {name} implements {', '.join(unknown)}, which is not a mino hook "
                        f"(the hooks are in mino_core.hookspecs)")

    def load_entry_points(self, entry_points: Iterable[Any] | None = None) -> None:
        """Load ``entry_points`` (``importlib.metadata.EntryPoint``-like; by default the
        installed ``mino`` group, as ``entry_points.py`` reads it)."""
        allow, deny = _env_list("MINO_PLUGINS"), _env_list("MINO_DISABLE_PLUGINS") or set()
        if entry_points is None:
            entry_points = _entry_points.entry_points(GROUP)
        for ep in sorted(entry_points, key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            info = PluginInfo(ep.name, getattr(dist, "name", "") or "",
                              getattr(dist, "version", "") or "", ep.value)
            if ep.name in self.plugins:
                self._fail(f"Two plugins are named {ep.name!r} ({self.plugins[ep.name].distribution} "
                           f"and {info.distribution}); the second was not loaded. Uninstall one.")
                continue
            self.plugins[ep.name] = info
            if ep.name in deny or (allow is not None and ep.name not in allow):
                info.status = "disabled"
                continue
            try:
                module = ep.load()
                self.pm.register(module, name=ep.name)
                self._check_hooks(ep.name, module)
            except Exception as exc:  # noqa: BLE001 - one broken plugin must not stop mino
                if strict():
                    raise
                info.status, info.error = "failed", _short_error(exc)
                log.warning("plugin_failed", plugin=ep.name, error=info.error, exc_info=True)
                self._fail(f"Plugin {ep.name} ({info.distribution} {info.version}) failed to load: "
                           f"{info.error}. mino started without it; fix or uninstall it, or set "
                           f"MINO_DISABLE_PLUGINS={ep.name} to silence this.")
                continue
            info.hooks = sorted(h.name for h in self.pm.get_hookcallers(module) or [])

    def _fail(self, message: str) -> None:
        self.errors.append(message)

    def finish(self) -> "Host":
        """Choose the memory backend. Tools are collected on first use (``tools``)."""
        self._choose_backend()
        return self

    @property
    def tools(self) -> dict[str, Tool]:
        """Every active plugin's tools by name, collected once, on first use.

        Collecting imports each tool plugin's modules; doing it when the first request is
        built (or in the background while the person types) keeps start-up fast.
        """
        return self.collect_tools()

    def collect_tools(self) -> dict[str, Tool]:
        if self._tools is None:
            with self._tools_lock:
                if self._tools is None:
                    self._tools = self._collect_tools()
        return self._tools

    def _choose_backend(self) -> None:
        offered: dict[str, str] = {}
        for name, value in self._call_all("memory_backend", {}, include_inactive=True):
            if isinstance(value, str) and value:
                self.plugins[name].backend = value
                offered.setdefault(value, name)
        wanted, source = os.environ.get("MINO_MEMORY_BACKEND", "").strip(), "MINO_MEMORY_BACKEND"
        if not wanted:
            memory = self.context.config.get("memory")
            wanted = str((memory or {}).get("backend") or "").strip() if isinstance(memory, dict) else ""
            source = "memory.backend in config.yaml"
        if wanted:
            if wanted in offered:
                self.backend, self.backend_reason = wanted, f"chosen by {source}"
            else:
                have = ", ".join(sorted(offered)) or "none"
                self._fail(f"{source} asks for memory backend {wanted!r}, which is not installed "
                           f"(installed: {have}). Running without memory.")
                self.backend, self.backend_reason = None, f"{wanted!r} from {source} is not installed"
        elif "graph" in offered:
            self.backend, self.backend_reason = "graph", "the graph backend is installed and nothing chose another"
        elif offered:
            self.backend = sorted(offered)[0]
            self.backend_reason = "the only memory backend installed"
        for name, info in self.plugins.items():
            if info.backend and info.backend != self.backend and info.status == "loaded":
                info.status = "inactive"
                self._inactive.add(name)

    def _collect_tools(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        owners: dict[str, list[tuple[str, Tool]]] = {}
        for name, result in self._call_all("register_tools", {"context": self.context}):
            for tool in result or []:
                if not isinstance(tool, Tool):
                    self._fail(f"Plugin {name} returned {type(tool).__name__} from register_tools, "
                               "not a mino_core.Tool; it was ignored.")
                    continue
                tool.plugin = name
                owners.setdefault(tool.name, []).append((name, tool))
        for tool_name, entries in sorted(owners.items()):
            if len(entries) > 1:
                who = " and ".join(n for n, _ in entries)
                self._fail(f"Tool {tool_name!r} is registered by both {who}. Neither copy is offered "
                           f"to the model; disable one plugin with MINO_DISABLE_PLUGINS="
                           f"{entries[-1][0]}.")
                continue
            name, tool = entries[0]
            tools[tool_name] = tool
            self.plugins[name].tools.append(tool_name)
        return tools

    # -- calling -------------------------------------------------------------

    def _call_all(self, hook: str, kwargs: dict[str, Any], include_inactive: bool = False,
                  failed: list[str] | None = None) -> list[tuple[str, Any]]:
        """Call ``hook`` through pluggy; return (plugin, result) for each non-None result.

        Plain implementations are contained one by one (a failure is logged, recorded in
        ``errors`` and its plugin appended to ``failed``). A wrapper that fails is named the
        same way: the call keeps what the implementations returned, or, when it failed
        before they ran, is made again without that wrapper."""
        caller = getattr(self.pm.hook, hook)
        impls = [i for i in caller.get_hookimpls()
                 if include_inactive or i.plugin_name not in self._inactive]
        firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
        while impls:
            produced: list[tuple[str, Any]] = []
            methods = [i if _is_wrapper(i) else self._contained(hook, i, produced, failed)
                       for i in _call_order(impls)]
            wrappers = [i for i in impls if _is_wrapper(i)]
            try:
                result = self.pm._hookexec(hook, methods, kwargs, firstresult)
            except Exception as exc:  # noqa: BLE001 - plain implementations are contained
                if strict() or not wrappers or isinstance(exc, pluggy.HookCallError):
                    raise
                culprit = _culprit(exc, wrappers) or "+".join(sorted({i.plugin_name for i in wrappers}))
                self._hook_failed(hook, culprit, exc, failed)
                if self._ran(methods):
                    return [(n, r) for n, r in produced if r is not None]
                impls = [i for i in impls if not (_is_wrapper(i) and i.plugin_name in culprit.split("+"))]
                continue
            if firstresult:
                result = [] if result is None else [result]
            names = "+".join(sorted({i.plugin_name for i in wrappers})) or hook
            return [pair for pair in _attribute(result, produced, names) if pair[1] is not None]
        return []

    @staticmethod
    def _ran(methods: list[Any]) -> bool:
        """Whether any contained implementation among ``methods`` was called."""
        return any(getattr(m.function, "called", False) for m in methods)

    def _contained(self, hook: str, impl: Any, produced: list, failed: list[str] | None):
        """A copy of ``impl`` whose function contains its own failure."""
        function, name = impl.function, impl.plugin_name

        def contained(*args: Any, **kwargs: Any) -> Any:
            contained.called = True  # type: ignore[attr-defined]
            started = time.perf_counter()
            try:
                result = function(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - contained per plugin
                if strict():
                    raise
                self._hook_failed(hook, name, exc, failed)
                return None
            if _tracing():
                log.info("hook_call", hook=hook, plugin=name,
                         ms=round((time.perf_counter() - started) * 1000, 3))
            produced.append((name, result))
            return result

        proxy = copy.copy(impl)
        proxy.function = contained
        return proxy

    def _hook_failed(self, hook: str, plugin: str, exc: Exception, failed: list[str] | None) -> None:
        log.warning("hook_failed", hook=hook, plugin=plugin, error=_short_error(exc), exc_info=exc)
        self.errors.append(f"Plugin {plugin} failed in {hook}: {_short_error(exc)}")
        if failed is not None:
            failed.append(plugin)

    def protected_paths(self) -> tuple:
        """What every loaded plugin declared through ``protected_paths`` (an inactive
        memory backend too: its files stay on disk), collected once per host; also set on
        ``self.context.protected`` for hooks that get only the context."""
        if self._protected is None:
            from .protected import normalise

            found = []
            for name, declared in self._call_all("protected_paths", {"context": self.context},
                                                 include_inactive=True):
                items, problems = normalise(name, declared)
                found += items
                self.errors += problems
            self._protected = tuple(found)
            self.context.protected = self._protected
        return self._protected

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Every active implementation's non-None result, as (plugin name, result)."""
        return [(n, r) for n, r in self._call_all(hook, kwargs) if r is not None]

    def votes(self, **kwargs: Any) -> list[Any]:
        """Every ``decide_permission`` vote. A policy that fails votes "ask": a lost vote
        might have been a deny, so the person decides instead of the remaining plugins."""
        from .permissions import Decision

        failed: list[str] = []
        votes = [r for _, r in self._call_all("decide_permission", kwargs, failed=failed)
                 if isinstance(r, Decision)]
        votes += [Decision.ask(f"plugin {name} failed while deciding") for name in failed]
        return votes

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call a hook whose return value is ignored (``after_turn``, ``tool_outcome``)."""
        self._call_all(hook, kwargs)

    def drain_errors(self) -> list[str]:
        errors, self.errors = self.errors, []
        return errors

    def failed_plugins(self) -> list[str]:
        return [name for name, info in self.plugins.items() if info.status == "failed"]


def _is_wrapper(impl: Any) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def _call_order(impls: list[Any]) -> list[Any]:
    """pluggy's order (it calls the list from the end): plain implementations before
    wrappers, each as trylast, plain, tryfirst; plugin-name order inside each class."""
    def rank(impl: Any) -> tuple[int, int]:
        return (int(_is_wrapper(impl)), 0 if impl.trylast else 2 if impl.tryfirst else 1)
    ordered = sorted(impls, key=lambda i: i.plugin_name, reverse=True)
    return sorted(ordered, key=rank)  # stable: names stay reversed inside a class


def _culprit(exc: BaseException, wrappers: list[Any]) -> str | None:
    """The wrapper plugin whose code raised ``exc`` (innermost frame), if any."""
    codes = {}
    for impl in wrappers:
        code = getattr(impl.function, "__code__", None)
        if code is not None:
            codes[code] = impl.plugin_name
    # pluggy re-raises some wrapper faults as its own error ("did not yield"): look at the
    # exceptions that led to this one too.
    chain: BaseException | None = exc
    while chain is not None:
        found, tb = None, chain.__traceback__
        while tb is not None:
            found = codes.get(tb.tb_frame.f_code, found)
            tb = tb.tb_next
        if found is not None:
            return found
        chain = chain.__cause__ or chain.__context__
    return None


def _attribute(result: Any, produced: list[tuple[str, Any]], wrappers: str) -> list[tuple[str, Any]]:
    """Pair pluggy's result list with the plugins that returned each item; an item a
    wrapper put there is the wrapper's."""
    if not isinstance(result, list):
        return [(wrappers, result)]
    pool = list(produced)
    out = []
    for value in result:
        for k, (name, mine) in enumerate(pool):
            if mine is value:
                out.append((name, value))
                del pool[k]
                break
        else:
            out.append((wrappers, value))
    return out


def _module_name(module: Any) -> str:
    if isinstance(module, ModuleType):
        return module.__name__
    return getattr(module, "__module__", type(module).__name__)


@functools.cache
def _core_version() -> str:
    """Read once: each core plugin registered asks, and each ask scans ``sys.path``."""
    return _entry_points.version("mino-core") or "0+unknown"


def build_host(context: PluginContext, extra: dict[str, Any] | None = None,
               entry_points: Iterable[Any] | None = None) -> Host:
    """A fresh host: the core's internal plugins, installed plugins, then ``extra`` ones.

    ``extra`` maps names to in-process plugin objects (tests register theirs this way).
    """
    from . import builtin

    host = Host(context)
    for name, module in builtin.plugins().items():
        host.register(name, module)
    host.load_entry_points(entry_points)
    for name, module in (extra or {}).items():
        host.register(name, module, distribution="(in-process)")
    return host.finish()
