"""The memeval-style domain corpus (Mnemo's retrieval gate), built through journal ops.

Four domains of four aspects, each aspect holding one ``knowledge`` fact and a PartOf
edge to its domain root; an episode fed by two aspects; one superseded fact; a salience
pain marker; a harness (left out by the Aspect kind filter). Pins under ``hashing-v1``
with routing: Hit@1 16/22, Hit@3 17/22, MRR 0.7427.
"""
from mino_memory_graph.core import ops
from mino_memory_graph.core.model import Graph

T = 1_700_000_000_000

DOMAINS = [
    ("kubernetes", [
        ("ingress annotations", "rewrite-target annotation routes paths; nginx ingress class"),
        ("helm rollback", "helm rollback revision needs wait flag; values overrides per env"),
        ("resource limits", "always set cpu and mem requests; liveness probe timeouts"),
        ("secrets management", "sealed secrets need kubeseal; never commit raw manifests"),
    ]),
    ("frontend", [
        ("react state", "redux slices per feature; zustand for local component state"),
        ("css layout", "grid for page shells; flexbox for toolbars; container queries"),
        ("bundler config", "vite aliases mirror tsconfig paths; chunk splitting manual"),
        ("a11y", "aria labels on icon buttons; focus trap in modals; contrast 4.5"),
    ]),
    ("python-backend", [
        ("venv setup", "create virtualenv python3 -m venv; pin requirements.txt"),
        ("async patterns", "await inside async def only; gather for concurrency"),
        ("db migrations", "alembic revision autogenerate; downgrade tested always"),
        ("testing", "pytest fixtures scope session; mock httpx with respx"),
    ]),
    ("observability", [
        ("structured logging", "one json object per line; request id on every span"),
        ("tracing spans", "parent span id links child work; sample head not tail"),
        ("alert routing", "page on symptom not cause; runbook link in every alert"),
        ("dashboards", "latency percentiles p50 p95 p99; never average a latency"),
    ]),
]

CASES = [
    ("how do I route paths through nginx ingress", ["ingress annotations"]),
    ("rollback a bad helm release", ["helm rollback"]),
    ("pods getting OOM killed", ["resource limits"]),
    ("store api keys safely in cluster", ["secrets management"]),
    ("global state management in components", ["react state"]),
    ("page grid and toolbar layout", ["css layout"]),
    ("vite build chunks slow", ["bundler config"]),
    ("modal focus keyboard trap", ["a11y"]),
    ("isolated python environment setup", ["venv setup"]),
    ("run coroutines concurrently", ["async patterns"]),
    ("database schema change rollback", ["db migrations"]),
    ("fixture scope for integration tests", ["testing"]),
    ("deploy failed 404 on rewritten path", ["ingress annotations", "pain: cart deploy 404"]),
    ("what fixed the rewrite 404 last time", ["ingress annotations"]),
    ("split vendor bundle manually", ["bundler config"]),
    ("one json object per log line", ["structured logging"]),
    ("link child work to a parent span", ["tracing spans"]),
    ("who gets paged when latency spikes", ["alert routing"]),
    ("p95 latency chart", ["dashboards"]),
    ("kubeseal encrypted manifest", ["secrets management"]),
    ("focus trap keyboard accessibility", ["a11y"]),
    ("cpu and memory requests for a pod", ["resource limits"]),
]


def corpus_ops() -> list[tuple[str, dict]]:
    """The corpus as journal ops, ids allocated the way Mnemo's fixture does."""
    g = Graph()
    out = []

    def put(op):
        g.apply(*op)
        out.append(op)

    nid = 0
    roots = []
    for domain, aspects in DOMAINS:
        nid += 1
        root = nid
        put(ops.create_node(root, "Entity", domain, T))
        kids = []
        for label, text in aspects:
            nid += 1
            put(ops.create_node(nid, "Aspect", label, T))
            put(ops.add_fact(nid, g.next_fact, "knowledge", text, T))
            put(ops.link(g.next_edge, nid, root, "PartOf", T))
            kids.append(nid)
        roots.append((root, kids))
    nid += 1
    ep = nid
    put(ops.create_node(ep, "TaskEpisode", "deploy checkout web app", T))
    ingress, bundler = roots[0][1][0], roots[1][1][2]
    for src in (ingress, bundler):
        put(ops.link(g.next_edge, src, ep, "SuppliesContext", T))
    old = g.nodes[ingress].facts[0].id
    put(ops.supersede_fact(ingress, old, "corrected",
                           "v1 annotation removed in networking.k8s.io/v1", g.next_fact, T + 100))
    nid += 1
    pain = nid
    put(ops.create_node(pain, "Aspect", "pain: cart deploy 404 after ingress change", T + 110))
    put(ops.set_area(pain, "Salience", T + 110))
    put(ops.add_fact(pain, g.next_fact, "failure",
                     "cart returned 404 when the rewrite-target annotation was dropped", T + 110))
    nid += 1
    put(ops.create_node(nid, "Harness", "helm rollback runbook", T + 111))
    put(ops.add_fact(nid, g.next_fact, "steps",
                     "run helm history, pick the last good revision, roll back with wait", T + 111))
    return out


def evaluate(search, label_of) -> dict:
    """Hit@1, Hit@3 and MRR of ``search(query) -> [node ids]`` over the cases."""
    h1 = h3 = 0
    rr = 0.0
    ranks = []
    for q, wants in CASES:
        labels = [label_of(i) for i in search(q)]
        rank = next((i + 1 for i, lab in enumerate(labels) if any(w in lab for w in wants)), 999)
        ranks.append(rank)
        h1 += rank == 1
        h3 += rank <= 3
        rr += 1.0 / rank
    return {"n": len(CASES), "hits_at_1": h1, "hits_at_3": h3, "mrr": rr / len(CASES),
            "ranks": ranks}
