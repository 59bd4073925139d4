"""The plugin host: find plugins, load each on its own, and call their hooks safely.

pluggy's own entry-point loader lets one import error escape and stop everything, and an
exception in one hook implementation stops the rest of that call. So the host iterates
entry points itself (filtering by MINO_PLUGINS / MINO_DISABLE_PLUGINS before importing),
records each plugin's status, and calls hooks itself, through pluggy's public API only
(``hook.get_hookimpls()``, each ``HookImpl``'s ``function``/``argnames``/order marks,
``pluggy.Result``), with every implementation in its own error handling: ``tryfirst``/
``trylast`` and wrappers (``wrapper=True``, old-style ``hookwrapper=True``) behave as
pluggy documents, and one failing plugin never silences another. (pluggy's own call
loop is private and stops at the first exception; tests/test_pluggy_contract.py fails
when pluggy changes what this relies on.) Within each of pluggy's order classes,
implementations run in plugin-name order, so the order does not depend on what else is
installed. ``MINO_STRICT_PLUGINS=1`` re-raises instead, for plugin authors and CI;
``MINO_TRACE_PLUGINS=1`` logs every hook call.
"""
from __future__ import annotations

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
    # The host this context belongs to (set by Host), for the services below.
    host: Any = field(default=None, repr=False, compare=False)

    def section(self, name: str) -> dict[str, Any]:
        value = self.config.get(name)
        return value if isinstance(value, dict) else {}

    def sandbox_command(self, argv: list[str], network: bool = False) -> list[str] | None:
        """``argv`` as a command line that runs it in the sandbox a plugin provides
        (``sandbox_command`` hook: tools-fs's bubblewrap), with the network only when
        ``network``; None when no sandbox can run it (the caller then refuses or asks)."""
        if self.host is None:
            return None
        found = self.host.call("sandbox_command", argv=list(argv), network=bool(network),
                               context=self)
        for _, wrapped in found:
            if isinstance(wrapped, list) and wrapped and all(isinstance(a, str) for a in wrapped):
                return wrapped
        return None


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
        context.host = self
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.errors: list[str] = []
        self._tools: dict[str, Tool] | None = None
        self._tools_lock = threading.Lock()
        self._apis: dict[str, Any] | None = None
        self._shut_down = False
        self.backend: str | None = None
        self.backends: dict[str, Any] = {}  # name -> MemoryBackend, every installed one
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

    def model_apis(self) -> dict[str, Any]:
        """Every active plugin's model API adapters by name (``register_model_apis``),
        collected once, when the first request is about to be sent."""
        if self._apis is None:
            with self._tools_lock:
                if self._apis is None:
                    from .model_api import collect

                    self._apis = collect(self)
        return self._apis

    def _choose_backend(self) -> None:
        from .backends import choose, declared

        self.backends = declared(self, self._call_all("memory_backend", {}, include_inactive=True))
        self.backend, self.backend_reason = choose(self, self.backends)
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
        """Call ``hook``; return (plugin, result) for each non-None result.

        Plain implementations are contained one by one (a failure is logged, recorded in
        ``errors`` and its plugin appended to ``failed``). A wrapper that fails is named the
        same way and left out: one that fails before it yields is skipped, one that fails
        after leaves the results as the wrappers inside it made them."""
        caller = getattr(self.pm.hook, hook)
        impls = [i for i in caller.get_hookimpls()
                 if include_inactive or i.plugin_name not in self._inactive]
        if not impls:
            return []
        spec = caller.spec
        if spec is not None:
            missing = [a for a in spec.argnames if a not in kwargs]
            if missing:
                raise pluggy.HookCallError(f"hook call must provide argument {missing[0]!r}")
        firstresult = bool(spec and spec.opts.get("firstresult"))
        ordered = _call_order(impls)
        wrappers = [i for i in ordered if _is_wrapper(i)]
        produced: list[tuple[str, Any]] = []
        entered = []
        for impl in wrappers:  # outermost first
            try:
                gen = impl.function(*[kwargs[a] for a in impl.argnames])
                next(gen)
            except StopIteration:
                self._wrapper_failed(hook, impl, RuntimeError("wrapper did not yield"), failed)
                continue
            except Exception as exc:  # noqa: BLE001 - contained per plugin
                self._wrapper_failed(hook, impl, exc, failed)
                continue
            entered.append((impl, gen))
        results: list[Any] = []
        for impl in (i for i in ordered if not _is_wrapper(i)):
            value = self._contained(hook, impl, kwargs, failed)
            if value is not None:
                produced.append((impl.plugin_name, value))
                results.append(value)
                if firstresult:
                    break
        result: Any = (results[0] if results else None) if firstresult else results
        for impl, gen in reversed(entered):
            before = result
            try:
                result = _resume(impl, gen, result)
            except Exception as exc:  # noqa: BLE001 - contained per plugin
                self._wrapper_failed(hook, impl, exc, failed)
                result = before
        if firstresult:
            result = [] if result is None else [result]
        names = "+".join(sorted({i.plugin_name for i, _ in entered})) or hook
        return [pair for pair in _attribute(result, produced, names) if pair[1] is not None]

    def _contained(self, hook: str, impl: Any, kwargs: dict[str, Any], failed: list[str] | None):
        """Call one plain implementation; its failure is its own (None comes back)."""
        started = time.perf_counter()
        try:
            result = impl.function(*[kwargs[a] for a in impl.argnames])
        except Exception as exc:  # noqa: BLE001 - contained per plugin
            if strict():
                raise
            self._hook_failed(hook, impl.plugin_name, exc, failed)
            return None
        if _tracing():
            log.info("hook_call", hook=hook, plugin=impl.plugin_name,
                     ms=round((time.perf_counter() - started) * 1000, 3))
        return result

    def _wrapper_failed(self, hook: str, impl: Any, exc: Exception, failed: list[str] | None) -> None:
        if strict():
            raise exc
        self._hook_failed(hook, impl.plugin_name, exc, failed)

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
        """What went wrong in plugins since the last call, then what plugins said through
        ``mino_core.notice`` / ``plugin_logger`` warnings: the front end shows both."""
        from . import notices

        errors, self.errors = self.errors, []
        return errors + notices.drain()

    def shutdown(self) -> None:
        """The process is done with this host: ``host_shutdown``, once. A failure is
        logged (and kept in ``errors``); a Ctrl-C only cuts it short."""
        with self._tools_lock:
            if self._shut_down:
                return
            self._shut_down = True
        try:
            self.notify("host_shutdown", context=self.context)
        except KeyboardInterrupt:
            pass

    def shutdown_at_exit(self) -> "Host":
        """Call ``shutdown`` when the process ends, however it ends (an error or Ctrl-C
        included), unless a front end did already."""
        import atexit

        atexit.register(self.shutdown)
        return self

    def failed_plugins(self) -> list[str]:
        return [name for name, info in self.plugins.items() if info.status == "failed"]


def _is_wrapper(impl: Any) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def _call_order(impls: list[Any]) -> list[Any]:
    """The order pluggy documents, in the order of calling: wrappers (outermost first)
    before plain implementations, each as tryfirst, plain, trylast; plugin-name order
    inside each class, so the order does not depend on what was registered when."""
    def rank(impl: Any) -> tuple[int, int, str]:
        return (0 if _is_wrapper(impl) else 1, 0 if impl.tryfirst else 2 if impl.trylast else 1,
                impl.plugin_name)
    return sorted(impls, key=rank)


def _resume(impl: Any, gen: Any, result: Any) -> Any:
    """Hand ``result`` back to a wrapper that yielded and return what it makes of it, as
    pluggy documents both kinds: ``wrapper=True`` gets the result at its ``yield`` and
    returns the new one; ``hookwrapper=True`` gets a ``pluggy.Result`` it may change."""
    if impl.hookwrapper:
        outcome = pluggy.Result(result, None)
        try:
            gen.send(outcome)
        except StopIteration:
            return outcome.get_result()
        raise RuntimeError("hookwrapper yielded twice")
    try:
        gen.send(result)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("wrapper yielded twice")


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
