"""pitfalls.replaced / reflect.plan_apply: a new working fix for a failure whose old fix
stopped working supersedes the old fix on its pitfall (issue 25, item 2)."""
from mino_memory_graph.core import ops
from mino_memory_graph.loop import pitfalls, reflect
from mino_memory_graph.core.model import Graph

T = 1_700_000_000_000
ERR = "lock timeout on schema_migrations [Exit code: 1]"


def _graph():
    g = Graph()
    for op in (
        ops.create_node(1, "Entity", "project repo:/x", T),
        ops.create_node(2, "TaskEpisode", "task: migrate", T),
        # the old pitfall, with the fix that worked then
        ops.create_node(3, "Aspect", "pain: Bash(sh scripts/migrate.sh) failed", T),
        ops.set_area(3, "Salience", T),
        ops.add_fact(3, 1, "failure", f"Bash(sh scripts/migrate.sh) failed: {ERR}", T),
        ops.add_fact(3, 2, "fix", "MIGRATE_LOCK_WAIT=60 sh scripts/migrate.sh", T),
        ops.create_node(4, "TaskEpisode", "task: migrate again", T + 1),
        # this run: the old fix itself failed the same way
        ops.create_node(5, "Aspect", "pain: Bash(MIGRATE_LOCK_WAIT=60 ...) failed", T + 1),
        ops.set_area(5, "Salience", T + 1),
        ops.add_fact(5, 3, "failure",
                     f"Bash(MIGRATE_LOCK_WAIT=60 sh scripts/migrate.sh) failed: {ERR}", T + 1),
        # another failure with the same words but another error: never the same pitfall
        ops.create_node(6, "Aspect", "pain: Bash(sh scripts/migrate.sh --dry) failed", T),
        ops.set_area(6, "Salience", T),
        ops.add_fact(6, 4, "failure", "Bash(sh scripts/migrate.sh --dry) failed: no plan", T),
        ops.add_fact(6, 5, "fix", "MIGRATE_LOCK_WAIT=60 sh scripts/migrate.sh --dry", T),
    ):
        g.apply(*op)
    return g


def test_the_pitfall_whose_fix_failed_the_same_way_is_found_among_those_shown():
    g = _graph()
    assert pitfalls.replaced(g, 5, [6, 3]) == 3
    assert pitfalls.replaced(g, 5, [6]) is None  # another error
    assert pitfalls.replaced(g, 5, []) is None   # only what the run was shown
    assert pitfalls.replaced(g, 3, [3]) is None  # itself
    assert pitfalls.split_failure("the build broke") is None


def test_plan_apply_supersedes_the_old_fix_and_leaves_the_runs_marker_without_one():
    g = _graph()
    p = reflect.Proposal()
    p.fixes = [{"problem": "the migrations hang on a held lock",  # other words: the only marker
                "fix": "sh scripts/migrate.sh --skip-locked"}]
    planned, notes = reflect.plan_apply(g, p, episode=4, user=1, project=1, pain=[5],
                                        session_id="s2", at=T + 2, shown=[3])
    for name, body in planned:
        g.apply(name, body)
    assert notes["fixed"] == [3]
    old = next(f for f in g.nodes[3].facts if f.id == 2)
    assert not old.active and old.value == "MIGRATE_LOCK_WAIT=60 sh scripts/migrate.sh"
    assert g.nodes[3].fact("fix").value == "sh scripts/migrate.sh --skip-locked"
    assert g.nodes[5].fact("fix") is None
    assert any(kind == "same_failure" for _, kind, _ in g.nodes[5].log)
    # the same fix again supersedes nothing
    planned, notes = reflect.plan_apply(g, p, episode=4, user=1, project=1, pain=[3],
                                        session_id="s3", at=T + 3, shown=[3])
    assert notes["fixed"] == [3]
    assert not any(name == "SupersedeFact" for name, _ in planned)


def test_the_same_error_behind_what_a_first_step_printed_is_the_same_error():
    """``prepare && build`` fails with build's error after prepare's output, and the
    window of three lines pushes the error's tail out: still the same error."""
    from mino_memory_graph.loop.steer import signature

    alone = signature("build.sh: JavaScript heap out of memory [Exit code: 1]")
    shifted = signature("prepared 5 asset bundles build.sh: JavaScript heap out of memory")
    assert pitfalls.same_error(alone, shifted) and pitfalls.same_error(shifted, alone)
    assert pitfalls.same_error(alone, alone)
    # a few words in common are not one error, nor is a short signature inside a long one
    assert not pitfalls.same_error(signature("no plan [Exit code: 1]"), alone)
    assert not pitfalls.same_error(signature("permission denied"),
                                   signature("cp: /srv/www: permission denied [Exit code: 1]"))
    assert not pitfalls.same_error(signature("build.sh: cannot find module react-dom"), alone)
    g = _graph()
    g.apply(*ops.create_node(7, "Aspect", "pain: Bash(sh prep.sh && MIGRATE...) failed", T + 2))
    g.apply(*ops.set_area(7, "Salience", T + 2))
    g.apply(*ops.add_fact(7, 6, "failure", "Bash(sh scripts/prep.sh && MIGRATE_LOCK_WAIT=60 sh "
                          "scripts/migrate.sh) failed: prepared 2 tables lock timeout on "
                          "schema_migrations", T + 2))
    assert pitfalls.replaced(g, 7, [6, 3]) == 3
