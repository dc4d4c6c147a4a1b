#!/usr/bin/python3
"""A strict reader of /metrics for tests/e2e/metrics.sh.

    metrics_check.py check text|openmetrics FILE
        Checks the exposition line by line against the format (Prometheus text 0.0.4 or
        OpenMetrics 1.0.0), then parses it with prometheus_client's parser for that format
        (Debian's python3-prometheus-client). Checked here beyond the parsers: every line
        is a HELP, a TYPE or a sample; each family has one HELP and one TYPE, before its
        samples, which are contiguous; no sample repeats; label values use only the \\\\,
        \\" and \\n escapes; counters are named *_total (in OpenMetrics, their family
        without it) and are never negative; every histogram series has its buckets in
        increasing le, cumulative counts that never fall, a +Inf bucket equal to its
        _count, and a _sum; OpenMetrics ends with "# EOF". Prints nothing and exits 0, or
        prints what is wrong and exits 1.

    metrics_check.py sum FILE NAME [LABEL=VALUE ...]
        Prints the sum of the samples named NAME whose labels include those given (0 when
        none matches).
"""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*=" + LABEL_VALUE
SAMPLE = re.compile(
    r"^(" + NAME + r")(?:\{((?:" + LABEL + r")(?:," + LABEL + r")*)?\})? (\S+)(?: (-?\d+))?$"
)
HELP = re.compile(r"^# HELP (" + NAME + r") (.*)$")
TYPE = re.compile(r"^# TYPE (" + NAME + r") (counter|gauge|histogram|summary|untyped|unknown)$")
LABEL_RE = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)=(" + LABEL_VALUE + r")")


def unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v[1:-1])


def parse_labels(text):
    return tuple((m.group(1), unescape(m.group(2))) for m in LABEL_RE.finditer(text or ""))


def value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$", text):
        raise ValueError("bad value %r" % text)
    return float(text)


def family_of(name, types):
    """The family a sample name belongs to (its suffix off for histograms, counters)."""
    for suffix in ("_bucket", "_sum", "_count", "_total", ""):
        if name.endswith(suffix):
            base = name[: len(name) - len(suffix)] if suffix else name
            if base in types:
                return base
    return name


def check(fmt, text):
    errors = []
    lines = text.split("\n")
    if lines[-1] != "":
        errors.append("the exposition does not end with a newline")
    lines = lines[:-1]
    if fmt == "openmetrics":
        if not lines or lines[-1] != "# EOF":
            errors.append("the exposition does not end with # EOF")
        lines = lines[:-1]
    helps, types, done, seen = {}, {}, set(), set()
    current = None
    hist = {}  # (family, labels without le) -> [(le, count)], plus _count and _sum
    for n, line in enumerate(lines, 1):
        where = "line %d: %r" % (n, line[:120])
        m = HELP.match(line) or TYPE.match(line)
        if m:
            fam = m.group(1)
            table = helps if line.startswith("# HELP") else types
            if fam in table or fam in done:
                errors.append(where + ": a second HELP or TYPE of " + fam)
            table[fam] = m.group(2)
            if current and current != fam:
                done.add(current)
            current = fam
            continue
        if line.startswith("#"):
            errors.append(where + ": a comment that is neither HELP nor TYPE")
            continue
        m = SAMPLE.match(line)
        if not m:
            errors.append(where + ": not a sample")
            continue
        name, labels = m.group(1), parse_labels(m.group(2))
        try:
            v = value(m.group(3))
        except ValueError as e:
            errors.append(where + ": " + str(e))
            continue
        fam = family_of(name, types)
        if fam not in types or fam not in helps:
            errors.append(where + ": a sample before its family's HELP and TYPE")
            continue
        if fam != current:
            errors.append(where + ": a sample away from its family's other samples")
        if (name, labels) in seen:
            errors.append(where + ": a repeated sample")
        seen.add((name, labels))
        kind = types[fam]
        if kind == "counter":
            want = fam + "_total" if fmt == "openmetrics" else fam
            if name != want or not want.endswith("_total"):
                errors.append(where + ": a counter's sample is not named <family>_total")
            if v < 0:
                errors.append(where + ": a negative counter")
        elif kind == "histogram":
            key = (fam, tuple(l for l in labels if l[0] != "le"))
            h = hist.setdefault(key, {"buckets": [], "count": None, "sum": None})
            if name == fam + "_bucket":
                le = dict(labels).get("le")
                if le is None:
                    errors.append(where + ": a bucket without le")
                else:
                    h["buckets"].append((value(le), v))
            elif name == fam + "_count":
                h["count"] = v
            elif name == fam + "_sum":
                h["sum"] = v
            else:
                errors.append(where + ": not a histogram sample")
        elif name != fam:
            errors.append(where + ": a %s sample named other than its family" % kind)
    for (fam, labels), h in hist.items():
        what = "%s%s" % (fam, dict(labels))
        les = [b[0] for b in h["buckets"]]
        counts = [b[1] for b in h["buckets"]]
        if les != sorted(les) or len(set(les)) != len(les):
            errors.append(what + ": buckets not in increasing le")
        if any(b < a for a, b in zip(counts, counts[1:])):
            errors.append(what + ": bucket counts fall")
        if not les or not math.isinf(les[-1]):
            errors.append(what + ": no +Inf bucket")
        elif h["count"] != counts[-1]:
            errors.append(what + ": +Inf bucket %s != count %s" % (counts[-1], h["count"]))
        if h["sum"] is None:
            errors.append(what + ": no _sum")
    try:
        if fmt == "openmetrics":
            from prometheus_client.openmetrics.parser import text_string_to_metric_families
        else:
            from prometheus_client.parser import text_string_to_metric_families
        list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own complaint
        errors.append("prometheus_client: %s" % e)
    return errors


def main():
    if sys.argv[1] == "check":
        with open(sys.argv[3]) as f:
            errors = check(sys.argv[2], f.read())
        for e in errors[:20]:
            print(e)
        sys.exit(1 if errors else 0)
    if sys.argv[1] == "sum":
        want = dict(a.split("=", 1) for a in sys.argv[4:])
        from prometheus_client.parser import text_string_to_metric_families

        total = 0.0
        with open(sys.argv[2]) as f:
            for fam in text_string_to_metric_families(f.read()):
                for s in fam.samples:
                    if s.name == sys.argv[3] and all(s.labels.get(k) == v for k, v in want.items()):
                        total += s.value
        print(int(total) if total == int(total) else total)
        return
    sys.exit("usage: metrics_check.py check text|openmetrics FILE | sum FILE NAME [L=V ...]")


if __name__ == "__main__":
    main()
