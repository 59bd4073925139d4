"""The .gitignore matcher against the cases of gitignore(5)."""
from mino_tools_fs.ignore import Ignore, parse, walk


def matches(patterns: str, rel: str, is_dir: bool = False, base: str = "") -> bool:
    verdict = False
    for rule in parse(patterns, base):
        if rule.dir_only and not is_dir:
            continue
        if rule.regex.match(rel):
            verdict = not rule.negated
    return verdict


def test_basename_patterns_match_at_any_depth():
    assert matches("*.log", "a.log")
    assert matches("*.log", "deep/er/a.log")
    assert not matches("*.log", "a.log.txt")
    assert matches("build", "x/build", is_dir=True)


def test_anchored_patterns_match_only_from_the_gitignore_folder():
    assert matches("/build", "build", is_dir=True)
    assert not matches("/build", "src/build", is_dir=True)
    assert matches("doc/*.txt", "doc/a.txt")
    assert not matches("doc/*.txt", "doc/sub/a.txt")


def test_double_star_forms():
    assert matches("**/cache", "a/b/cache")
    assert matches("**/cache", "cache")
    assert matches("logs/**", "logs/a/b.txt")
    assert not matches("logs/**", "logs", is_dir=True)
    assert matches("a/**/b", "a/b")
    assert matches("a/**/b", "a/x/y/b")


def test_directory_only_negation_comments_and_escapes():
    assert not matches("out/", "out")  # a file named out is kept
    assert matches("out/", "out", is_dir=True)
    assert not matches("*.log\n!keep.log", "keep.log")
    assert matches("*.log\n!keep.log", "other.log")
    assert not matches("# *.py", "a.py")
    assert matches(r"\#hash", "#hash")
    assert matches(r"\!bang", "!bang")
    assert matches("file?.[ch]", "file1.c") and not matches("file?.[ch]", "file1.o")
    assert matches("[!a]x", "bx") and not matches("[!a]x", "ax")


def test_walk_skips_git_and_ignored_and_reads_nested_gitignores(tmp_path):
    root = tmp_path
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / ".gitignore").write_text("*.pyc\nnode_modules/\n")
    (root / "a.py").write_text("")
    (root / "a.pyc").write_text("")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / ".gitignore").write_text("/generated.txt\n!keep.pyc\n")
    (root / "pkg" / "generated.txt").write_text("")
    (root / "pkg" / "keep.pyc").write_text("")
    (root / "pkg" / "mod.py").write_text("")
    listed = sorted(rel for rel, _ in walk(root, root, True, Ignore(root)))
    assert listed == [".gitignore", "a.py", "pkg", "pkg/.gitignore", "pkg/keep.pyc", "pkg/mod.py"]
