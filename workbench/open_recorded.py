"""``workbench open <dataset>:<conversation>``: open a recorded real-scale conversation in the app in one command.

Every whole-conversation recording committed for that conversation (``sample_data/cassettes/<dataset>/
<method>-<conversation>.jsonl``, one per method, made by ``benchmarks/record_real_scale.py``) is replayed with no
model into one run directory, as it was recorded (``workbench eval --data locomo:<dev copy> --conversations C
--categories 1,2,3,4 --judge same --save-memories --bounded-outputs``, and ``profile="small"`` for the methods that
have two profiles); the run gets its saved memories, the mechanism census and the replayed mechanism gallery, and
the app is served over it.

The run directory is named by a key of what the replay reads (each cassette's content hash, the dataset file's
hash, the questions and categories asked), so a second ``open`` of the same recordings finds the finished run
(``open.json``) and serves it at once, and a changed cassette replays into a new directory instead of mixing with
rows replayed from the old one.

A method parameter given with ``--param`` goes to the methods that declare it (``MemoryMethod._param_names``) and
is left out, with a note, for the others: ``--param profile=paper`` changes the paper methods, never the baselines.

A call the cassette does not hold (the code's prompts or a parameter differ from the recording) fails and is
counted per method; the command says so, and with ``--no-serve`` exits 1 (a method may carry on past a failed
call, so the rows alone do not always show it).
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

#: what the real-scale recorder asked (benchmarks/record_real_scale.py: CATEGORIES)
RECORDED_CATEGORIES = (1, 2, 3, 4)
#: parameters the recorder passed to every method that declares them
RECORDED_PARAMS = {"profile": "small"}
#: the dataset files a data folder may hold, per dataset kind, the team's dev copy first
DATA_FILES = {"locomo": ("locomo/locomo10_dev.json", "locomo/locomo10.json")}
DEFAULT_OUT = Path("runs") / "open"
MARKER = "open.json"
KEY_VERSION = 1  # bump when what a finished run holds changes, so old runs are not reused


def cassette_dir(kind: str) -> Path:
    from .data import SAMPLE_DIR

    return SAMPLE_DIR / "cassettes" / kind


def recorded_methods(kind: str, conversation: str) -> dict[str, Path]:
    """``method -> cassette`` of every committed whole-conversation recording of ``conversation``, in the
    registry's order; a cassette of a method this install does not register, and a recording still in
    progress (``.partial.jsonl``), are left out."""
    from .methods import REGISTRY

    folder = cassette_dir(kind)
    found = {}
    for name in REGISTRY:
        path = folder / f"{name}-{conversation}.jsonl"
        if path.is_file():
            found[name] = path
    return found


def recorded_conversations(kind: str) -> list[str]:
    """The conversations at least one registered method has a committed recording of (for error messages)."""
    from .methods import REGISTRY

    out = set()
    for path in cassette_dir(kind).glob("*.jsonl"):
        if path.name.endswith(".partial.jsonl"):
            continue
        for name in REGISTRY:
            if path.stem.startswith(name + "-"):
                out.add(path.stem[len(name) + 1:])
    return sorted(out)


def parse_target(target: str) -> tuple[str, str]:
    """``locomo:conv-30`` -> ("locomo", "conv-30"); a bare ``conv-30`` is a LoCoMo conversation."""
    kind, sep, conv = target.partition(":")
    if not sep:
        kind, conv = "locomo", target
    if kind not in DATA_FILES:
        raise SystemExit(f"workbench open: unknown dataset {kind!r} in {target!r}; recorded conversations exist "
                         f"for: {', '.join(sorted(DATA_FILES))} (e.g. locomo:conv-30)")
    if not conv:
        raise SystemExit(f"workbench open: {target!r} names no conversation (e.g. locomo:conv-30)")
    return kind, conv


def data_dirs(start: Path | None = None) -> list[Path]:
    """Where the shared data folder is looked for: ``../shared/data`` beside the current directory and beside
    the checkout this package runs from (the team's layout: the data is read in place, never copied)."""
    here = (start or Path.cwd()).resolve()
    checkout = Path(__file__).resolve().parents[1]
    out = []
    for base in (here, checkout):
        cand = base.parent / "shared" / "data"
        if cand not in out:
            out.append(cand)
    return out


def find_data(kind: str, data: str | None, data_dir: str | None) -> str:
    """The data spec (``locomo:<file>``) to replay against: ``data`` as given, else the dataset file inside
    ``data_dir``, else inside the first folder of ``data_dirs`` that holds one. Exits with the places looked in."""
    if data:
        given_kind, _, path = data.partition(":")
        if given_kind != kind or not path:
            raise SystemExit(f"workbench open: --data {data!r} must be {kind}:<file> for a {kind} conversation")
        if not Path(path).is_file():
            raise SystemExit(f"workbench open: --data file not found: {path}")
        return data
    folders = [Path(data_dir)] if data_dir else data_dirs()
    tried = []
    for folder in folders:
        for rel in DATA_FILES[kind]:
            path = folder / rel
            tried.append(str(path))
            if path.is_file():
                return f"{kind}:{path}"
    hint = "--data-dir DIR (the folder holding " + " or ".join(DATA_FILES[kind]) + f") or --data {kind}:<file>"
    raise SystemExit(f"workbench open: no {kind} dataset file found (looked for {', '.join(tried)}); the recorded "
                     f"conversations are replayed against it, and it is not shipped with the workbench: pass {hint}")


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def params_for(cls, params: dict) -> dict:
    """The subset of ``params`` that method class ``cls`` declares."""
    names = set(cls._param_names())
    return {k: v for k, v in params.items() if k in names}


def split_params(methods: list[str], given: dict) -> tuple[dict[str, dict], list[str]]:
    """Per method, the recorded parameters (``RECORDED_PARAMS``) overridden by ``given``, each kept only where the
    method declares it; and a note per given parameter some methods do not take. A parameter no chosen method
    takes is a usage error (a typo would otherwise be dropped silently)."""
    from .methods import REGISTRY

    per = {m: params_for(REGISTRY[m], {**RECORDED_PARAMS, **given}) for m in methods}
    notes = []
    for key in given:
        takers = [m for m in methods if key in per[m]]
        if not takers:
            raise SystemExit(f"workbench open: no method of this run takes parameter {key!r} "
                             f"(methods: {', '.join(methods)})")
        if len(takers) < len(methods):
            notes.append(f"--param {key} applies to {', '.join(takers)} only (the others do not declare it)")
    return per, notes


def run_key(cassettes: dict[str, Path], data_file: Path, questions: int | None, categories, params: dict) -> dict:
    """What the replayed run depends on, and its short hash (the run directory's name ends with it)."""
    inputs = {"version": KEY_VERSION, "cassettes": {m: file_hash(p) for m, p in cassettes.items()},
              "data": file_hash(data_file), "questions": questions, "categories": list(categories),
              "params": params}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return {**inputs, "key": digest}


def finished(out: Path, key: str) -> dict | None:
    """The marker of a finished replay of these inputs in ``out``, or None (absent, unreadable or another key)."""
    path = out / MARKER
    if not path.is_file():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"note: {path} is unreadable ({type(exc).__name__}: {exc}); replaying again", file=sys.stderr)
        return None
    return marker if isinstance(marker, dict) and marker.get("key") == key and marker.get("complete") else None


def replay_method(name: str, cassette: Path, dataset, data_spec: str, conversation: str, out: Path, *,
                  params: dict, questions: int | None, categories, embedder, progress: bool) -> dict:
    """Replay one method's recording into ``out`` as the recorder ran it; returns its call and row figures."""
    from .eval import LLMJudge, evaluate
    from .eval.manifest import update_run_manifest
    from .eval.settings import build_method
    from .llm import CachedLLM

    llm = CachedLLM.replay(cassette)
    setup = build_method(name, llm=llm, embedder=embedder, params=params, data=data_spec, calibration="auto",
                         bounded=True, warn=False)
    started = time.perf_counter()
    res = evaluate(setup.method, dataset, judge=LLMJudge(llm), store=out / "results.jsonl", questions=questions,
                   conversations=conversation, categories=list(categories), progress=progress,
                   save_memories_dir=out, extra_manifest={**setup.manifest(), "cassette": cassette.name})
    update_run_manifest(out, res.manifest, name=out.name, created_by="workbench open")
    judge_errors = sum(1 for r in res if getattr(r, "judge_error", None))
    return {"rows": len(res), "errors": len(res.errors), "judge_errors": judge_errors, "hits": llm.hits,
            "misses": llm.replay_misses,
            "model": llm.model, "params": params, "wall_s": round(time.perf_counter() - started, 1)}


def open_recorded(target: str, *, data: str | None = None, data_dir: str | None = None, out_root=DEFAULT_OUT,
                  methods=None, questions: int | None = None, params: dict | None = None, progress: bool = True,
                  gallery: bool = True) -> tuple[Path, dict]:
    """Replay (or reuse) the run of ``target``; returns its directory and its ``open.json`` marker."""
    from .data import load_dataset
    from .embed import embedder_from_spec
    from .eval.mechanisms import census, summary_line, write_census

    kind, conv = parse_target(target)
    found = recorded_methods(kind, conv)
    if not found:
        known = recorded_conversations(kind)
        raise SystemExit(f"workbench open: no committed recording of {kind} conversation {conv!r} in "
                         f"{cassette_dir(kind)}; recorded: {', '.join(known) or 'none'}")
    if methods:
        unknown = [m for m in methods if m not in found]
        if unknown:
            raise SystemExit(f"workbench open: {', '.join(unknown)} not recorded on {conv}; recorded: "
                             f"{', '.join(found)}")
        found = {m: found[m] for m in methods}
    per_method, notes = split_params(list(found), params or {})
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    spec = find_data(kind, data, data_dir)
    data_file = Path(spec.partition(":")[2])
    dataset = load_dataset(spec)
    if conv not in {c.id for c in dataset}:
        raise SystemExit(f"workbench open: {data_file} holds no conversation {conv!r} "
                         f"(it holds {', '.join(c.id for c in dataset)})")
    key = run_key(found, data_file, questions, RECORDED_CATEGORIES, per_method)
    out = Path(out_root) / f"{kind}-{conv}-{key['key'][:12]}"
    marker = finished(out, key["key"])
    if marker is not None:
        print(f"{target}: reusing {out} (replayed before from the same cassettes and data)", file=sys.stderr)
        if gallery and not marker.get("gallery"):
            marker = _add_gallery(out, marker)
        return out, marker
    out.mkdir(parents=True, exist_ok=True)
    embedder = embedder_from_spec("minilm")  # what the recorder's `workbench eval` used (its default)
    figures = {}
    for name, cassette in found.items():
        print(f"== {name}: replaying {cassette.name}", file=sys.stderr)
        figures[name] = replay_method(name, cassette, dataset, spec, conv, out, params=per_method[name],
                                      questions=questions, categories=RECORDED_CATEGORIES, embedder=embedder,
                                      progress=progress)
        f = figures[name]
        print(f"   {f['rows']} questions, {f['hits']} calls replayed, {f['misses']} not in the cassette, "
              f"{f['errors']} failed rows ({f['wall_s']} s)", file=sys.stderr)
    mechanisms = census(out)
    write_census(out, mechanisms)
    marker = {**{k: v for k, v in key.items() if k != "params"}, "target": f"{kind}:{conv}",
              "data_file": data_file.name, "methods": figures, "complete": True, "created_by": "workbench open",
              "mechanisms": summary_line(mechanisms), "gallery": False}
    if gallery:
        return out, _add_gallery(out, marker)
    _write_marker(out, marker)
    return out, marker


def _write_marker(out: Path, marker: dict) -> None:
    from .jsonl import write_text_atomic

    write_text_atomic(out / MARKER, json.dumps(marker, indent=2, sort_keys=True) + "\n")


def _add_gallery(out: Path, marker: dict) -> dict:
    """The mechanism gallery replayed into the run (the app's How it works tab), as ``workbench demo`` does;
    a failure is printed there and the marker says no gallery, so the next ``open`` tries again."""
    from .demo import replay_gallery

    marker = {**marker, "gallery": replay_gallery(out) is not None}
    _write_marker(out, marker)
    return marker


def misses_of(marker: dict) -> dict[str, int]:
    return {m: f.get("misses", 0) for m, f in (marker.get("methods") or {}).items() if f.get("misses", 0)}


def open_command(args) -> int:
    from .extras import usage_errors
    from .methods.spec import parse_params

    with usage_errors():
        given = parse_params(args.param)
    out, marker = open_recorded(args.target, data=args.data, data_dir=args.data_dir, out_root=args.out,
                                methods=args.methods, questions=args.questions, params=given,
                                progress=not args.no_progress, gallery=not args.no_gallery)
    rows = sum(f.get("rows", 0) for f in marker["methods"].values())
    print(f"{marker['target']}: {len(marker['methods'])} methods ({', '.join(marker['methods'])}), {rows} rows in "
          f"{out}")
    missed = misses_of(marker)
    if missed:
        print("warning: calls not in the cassettes (the code or a parameter differs from the recording): "
              + ", ".join(f"{m} {n}" for m, n in missed.items()) + "; those calls failed, so these methods' "
              "memories and answers are not the recorded ones (a method may carry on past a failed call)",
              file=sys.stderr)
    if args.no_serve:
        return 1 if missed else 0
    from .extras import serve_app  # widgets sit above the core: imported by name, never statically

    serve_app(out, port=args.port, address="127.0.0.1", show=not args.no_browser)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("open", help="open a recorded real-scale conversation in the app (replays every committed "
                                    "cassette of it once, then serves the app)")
    p.add_argument("target", help="dataset:conversation, e.g. locomo:conv-30")
    p.add_argument("--data", default=None, help="the dataset file as a data spec (locomo:<file>); default: found "
                                                "in --data-dir")
    p.add_argument("--data-dir", default=None, help="the shared data folder (holding locomo/locomo10_dev.json); "
                                                    "default: ../shared/data beside this directory or the checkout")
    p.add_argument("--methods", nargs="+", default=None, help="only these recorded methods (default: all)")
    p.add_argument("--questions", type=int, default=None, help="only the first N recorded questions (a quick look)")
    p.add_argument("--param", action="append", metavar="K=V",
                   help="method parameter (JSON value), given only to the methods that declare it; repeatable")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of the replayed runs (one per set of inputs)")
    p.add_argument("--port", type=int, default=5006, help="port of the app")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.add_argument("--no-serve", action="store_true", help="stop after the replay (exit 1 if calls were missing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--no-gallery", action="store_true", help="skip replaying the mechanism gallery")
    p.set_defaults(func=open_command)
