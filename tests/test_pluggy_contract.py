"""What the host relies on from pluggy, and nothing else: public names only.

``mino_core.plugins`` calls hooks itself (pluggy's call loop is private and stops at the
first exception), reading each ``HookImpl`` and resuming wrappers with ``pluggy.Result``.
pyproject pins ``pluggy>=1.3,<2``; this test fails first if a pluggy release changes any
of it, before a plugin's wrapper or order mark silently behaves differently.
"""
from __future__ import annotations

import pluggy

from mino_core import hookspecs

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)


class Marked:
    @hookimpl(tryfirst=True)
    def front_input(self, turn):
        return "first"

    @hookimpl(wrapper=True)
    def after_turn(self, turn):
        return (yield)

    @hookimpl(hookwrapper=True, trylast=True)
    def tool_outcome(self, outcome, turn):
        yield


def manager():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    plugin = Marked()
    pm.register(plugin, name="marked")
    return pm, plugin


def test_hookimpls_expose_function_argnames_and_order_marks():
    pm, plugin = manager()
    [impl] = pm.hook.front_input.get_hookimpls()
    assert impl.plugin_name == "marked" and impl.plugin is plugin
    assert impl.argnames == ("turn",) and impl.function(None) == "first"
    assert (impl.tryfirst, impl.trylast, impl.wrapper, impl.hookwrapper) == (True, False, False, False)
    [wrap] = pm.hook.after_turn.get_hookimpls()
    assert wrap.wrapper and not wrap.hookwrapper
    [old] = pm.hook.tool_outcome.get_hookimpls()
    assert old.hookwrapper and old.trylast and old.argnames == ("outcome", "turn")
    assert {h.name for h in pm.get_hookcallers(plugin)} == {"front_input", "after_turn", "tool_outcome"}


def test_specs_expose_argnames_and_options():
    pm, _ = manager()
    spec = pm.hook.decide_permission.spec
    assert spec.argnames == ("call", "tool", "mode", "session")
    assert spec.opts.get("firstresult") is False


def test_an_implementation_with_an_argument_the_spec_lacks_is_refused_at_registration():
    # The host passes implementations only the spec's arguments (impl.argnames): pluggy
    # must keep refusing an implementation that wants more.
    class Greedy:
        @hookimpl
        def front_input(self, turn, extra):
            return "x"

    pm, _ = manager()
    try:
        pm.register(Greedy(), name="greedy")
    except pluggy.PluginValidationError:
        pass
    else:  # pragma: no cover - the failure this test exists for
        raise AssertionError("pluggy accepted an argument the spec does not have")


def test_result_carries_a_value_an_old_style_wrapper_may_replace():
    outcome = pluggy.Result(["a"], None)
    assert outcome.get_result() == ["a"]
    outcome.force_result(["b"])
    assert outcome.get_result() == ["b"]
    failed = pluggy.Result(None, ValueError("x"))
    try:
        failed.get_result()
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a Result holding an exception must raise it")


def test_the_host_uses_no_private_pluggy_name():
    import ast
    import inspect

    from mino_core import plugins

    tree = ast.parse(inspect.getsource(plugins))
    private = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                      and node.attr.startswith("_") and not node.attr.startswith("__")
                      and isinstance(node.value, ast.Attribute) and node.value.attr == "pm"})
    names = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name) and node.value.id == "pluggy"})
    assert private == [], private
    assert all(not n.startswith("_") for n in names), names
