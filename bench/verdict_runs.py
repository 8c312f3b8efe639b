#!/usr/bin/env python3
"""Where the between-run noise of a calibration comes from.

Reads the runs that bench/verdict_calibration.sh --runs-out FILE wrote (the
daemon's runs as JSON) and prints, per config in time order: the runs, the
spread of their throughput (CV), its lag-1 autocorrelation (near 0: runs vary
independently; near 1: slow drift, which interleaving cancels), the mean SM
clock, power and temperature with their correlation to throughput, and the
runs flagged contended or throttled. Where two configs alternate (compare
--repeat), it adds the spread of the ratio of neighbouring runs: what a test
pairing each A with the B after it would face.

    bench/verdict_runs.py runs.json
"""
import json
import statistics
import sys


def corr(x, y):
    if len(x) < 3 or statistics.pstdev(x) == 0 or statistics.pstdev(y) == 0:
        return float("nan")
    mx, my = statistics.fmean(x), statistics.fmean(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y)) / len(x)
    return cov / (statistics.pstdev(x) * statistics.pstdev(y))


def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def field(d, snake):
    """d[snake], or its camelCase spelling."""
    parts = snake.split("_")
    return d.get(snake, d.get(parts[0] + "".join(p.title() for p in parts[1:]), {}))


def main(path):
    data = json.load(open(path))
    runs = data["runs"] if isinstance(data, dict) else data
    runs = [r for r in runs if r.get("state") == "RUN_STATE_SUCCEEDED"]
    runs.sort(key=lambda r: r.get("startTime", r.get("start_time", "")))
    by_config = {}
    for r in runs:
        key = json.dumps(r.get("config", {}), sort_keys=True)
        by_config.setdefault(key, []).append(r)
    print("%-46s %4s %11s %6s %6s %7s %6s %6s %6s %6s %5s" % (
        "config", "runs", "samples/s", "cv", "lag1", "sm MHz", "r_clk", "W", "degC",
        "r_temp", "flag"))
    series = {}
    flats = {key: flat(json.loads(key)) for key in by_config}
    names = sorted({k for f in flats.values() for k in f})
    differ = [k for k in names if len({str(f.get(k)) for f in flats.values()}) > 1]
    for key, rs in by_config.items():
        f = flats[key]
        label = " ".join([str(f.get("workload"))] +
                         ["%s=%s" % (k.split(".")[-1], f.get(k)) for k in differ
                          if k != "workload"])[:46]
        res = [r.get("result", {}) for r in rs]
        tput = [x.get("throughput_samples_per_s", x.get("throughputSamplesPerS", 0)) for x in res]
        tel = [x.get("telemetry", {}) for x in res]
        clk = [field(t, "sm_clock_mhz").get("mean", 0) for t in tel]
        watts = [field(t, "power_w").get("mean", 0) for t in tel]
        temp = [field(t, "temperature_c").get("mean", 0) for t in tel]
        flagged = sum(1 for x in res if x.get("contention", {}).get("contended"))
        cv = statistics.pstdev(tput) / statistics.fmean(tput) if len(tput) > 1 else 0
        lag1 = corr(tput[:-1], tput[1:])
        print("%-46s %4d %11.1f %5.2f%% %6.2f %7.0f %6.2f %6.0f %6.1f %6.2f %5d" % (
            label, len(rs), statistics.fmean(tput), 100 * cv, lag1,
            statistics.fmean(clk), corr(tput, clk), statistics.fmean(watts),
            statistics.fmean(temp), corr(tput, temp), flagged))
        series[label] = [(r.get("startTime", r.get("start_time", "")), t) for r, t in zip(rs, tput)]
    if len(series) == 2:
        (la, a), (lb, b) = series.items()
        merged = sorted([(t, 0, v) for t, v in a] + [(t, 1, v) for t, v in b])
        ratios = []
        for (t0, s0, v0), (t1, s1, v1) in zip(merged, merged[1:]):
            if s0 == 0 and s1 == 1:
                ratios.append(v1 / v0)
        if len(ratios) > 1:
            print("neighbouring %s/%s: %d pairs, ratio %.4f, cv of the ratio %.2f%%" % (
                lb, la, len(ratios), statistics.fmean(ratios),
                100 * statistics.pstdev(ratios) / statistics.fmean(ratios)))


if __name__ == "__main__":
    main(sys.argv[1])
