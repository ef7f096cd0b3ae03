"""The mail corpus through two source trees: reply quality per language and client, machine
mail caught, throughput and the slowest mail, before and after.

    .venv/bin/python tests/bench/bench_email_corpus.py [--before-ref main] [--rounds 3]
    .venv/bin/python tests/bench/bench_email_corpus.py --before /path/to/tree

The "before" tree is `git archive` of --before-ref (default: the commit this branch
left main at) unpacked into a temporary folder, or --before. Each tree parses every
corpus fixture of THIS tree (tests/email/corpus/) in a fresh process with its own
`parse_mail` and `machine_reason`, the trees alternating round by round (A B A B) so the
machine's load falls on both alike; quality is scored here with corpus_kit.score.
Prints per-language and per-client tables, machine mail caught per family, mails/CPU-s
and the slowest mail (median over rounds).
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))
from tests.email.corpus_kit import Fixture, fixtures, score  # noqa: E402

PROBE = """
import json, pickle, sys, time
sys.path.insert(0, {tree!r})
from channels.email.parse import parse_mail
from channels.email.safety import machine_reason
raws = pickle.load(open({raws!r}, "rb"))
parse_mail(raws[0][1], 20000)  # the patterns compile once per process
out = {{}}
for name, raw in raws:
    t = time.process_time()
    mail = parse_mail(raw, 20000)
    spent = time.process_time() - t
    out[name] = [mail.text, machine_reason(mail, "bot@example.org"), spent]
print(json.dumps(out))
"""


def run(tree: Path, raws: Path) -> dict[str, list]:
    code = PROBE.format(tree=str(tree), raws=str(raws))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree)
    done.check_returncode()
    return json.loads(done.stdout.strip().splitlines()[-1])


def archive(ref: str, into: Path) -> Path:
    base = subprocess.run(
        ["git", "-C", str(HERE), "merge-base", "HEAD", ref], capture_output=True, text=True
    ).stdout.strip()
    tar = subprocess.run(["git", "-C", str(HERE), "archive", base or ref], capture_output=True)
    path = into / "tree.tar"
    path.write_bytes(tar.stdout)
    with tarfile.open(path) as t:
        t.extractall(into / "before", filter="data")
    print(f"before: {ref} at {base[:12]}")
    return into / "before"


def table(title: str, groups: dict[str, list[Fixture]], outs: dict[str, dict]) -> None:
    print(f"\n{title:16} {'mails':>5}  " + "  ".join(f"{k:>17}" for k in outs))
    for key in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        cells = []
        for out in outs.values():
            marks = [score(out[fx.name][0], fx.expected()) for fx in groups[key]]
            exp, ok = marks.count("expected"), marks.count("expected") + marks.count("usable")
            cells.append(f"{exp / len(marks):>7.0%} /{ok / len(marks):>6.0%}   ")
        print(f"{key:16} {len(groups[key]):>5}  " + "  ".join(cells))


def machine(every: list[Fixture], outs: dict[str, dict]) -> None:
    kinds: dict[str, list[Fixture]] = defaultdict(list)
    for fx in every:
        if fx.role == "machine":
            kinds[fx.client.split("-")[0]].append(fx)
    print(f"\n{'machine mail':16} {'mails':>5}  " + "  ".join(f"{k:>9}" for k in outs))
    for kind, group in sorted(kinds.items()):
        cells = [
            f"{sum(o[fx.name][1] is not None for fx in group) / len(group):>9.0%}"
            for o in outs.values()
        ]
        print(f"{kind:16} {len(group):>5}  " + "  ".join(cells))
    people = [fx for fx in every if fx.role in ("reply", "person")]
    wrong = [sum(o[fx.name][1] is not None for fx in people) for o in outs.values()]
    print(f"{'people flagged':16} {len(people):>5}  " + "  ".join(f"{w:>9}" for w in wrong))


def speed(label: str, rounds: list[dict[str, list]]) -> None:
    rates = [len(r) / sum(v[2] for v in r.values()) for r in rounds]
    worst = [max(r.items(), key=lambda kv: kv[1][2]) for r in rounds]
    slow = statistics.median(w[1][2] for w in worst) * 1000
    print(
        f"{label:8} {statistics.median(rates):>9,.0f} mails/CPU-s   slowest {slow:.1f} ms "
        f"({worst[-1][0]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path)
    parser.add_argument("--before-ref", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    every = fixtures()
    with tempfile.TemporaryDirectory() as tmp:
        raws = Path(tmp) / "raws.pickle"
        raws.write_bytes(pickle.dumps([(fx.name, fx.raw()) for fx in every]))
        before = args.before or archive(args.before_ref, Path(tmp))
        trees = {"before": before.resolve(), "after": HERE}
        runs: dict[str, list[dict[str, list]]] = {k: [] for k in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                runs[label].append(run(tree, raws))
    outs = {label: r[-1] for label, r in runs.items()}
    replies = [fx for fx in every if fx.role == "reply"]
    by_lang, by_client = defaultdict(list), defaultdict(list)
    for fx in replies:
        by_lang[fx.language].append(fx)
        by_client[fx.client].append(fx)
    print("\nexpected reply / usable (reply there, thread gone), before and after")
    table("all", {"all": replies}, outs)
    table("language", by_lang, outs)
    table("client", by_client, outs)
    machine(every, outs)
    print(f"\nthroughput over {len(every)} mails, median of {args.rounds} rounds")
    for label, r in runs.items():
        speed(label, r)


if __name__ == "__main__":
    main()
