#!/usr/bin/env python3
"""Renders the operator dashboard's body (OperatorDashboard in template.yaml) to a PNG.

The picture is a rendering of the DashboardBody JSON - its 24-column layout, widget titles,
metrics, alarms and log queries - by a small HTML approximation in headless Chromium. It is not a
screenshot of CloudWatch, and the lines in the graphs are illustrative shapes, not data; the
picture says so in its banner.

    python3 scripts/render-dashboard.py [docs/dashboard.png]

Needs only Python 3 and Chromium (`apt-get install -y chromium`, or CHROMIUM=/path/to/chrome).
The body is taken from template.yaml as text (the block scalar under DashboardBody), so no YAML
library is needed; `${...}` substitutions get sample values of a stack named argo-medic.
"""

import hashlib
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SAMPLE = {
    "AWS::Region": "eu-west-1",
    "AWS::StackName": "argo-medic",
    "InstanceId": "prod",
    "QueueAgeAlarmSeconds": "1800",
    "WorkerMaxConcurrency": "5",
    "IngestFunction": "argo-medic-IngestFunction",
    "WorkerFunction": "argo-medic-WorkerFunction",
    "SweeperFunction": "argo-medic-SweeperFunction",
    "SlackActionsFunctionName": "argo-medic-SlackActionsFunction",
    "WorkQueue.QueueName": "argo-medic-WorkQueue",
    "DeadLetterQueue.QueueName": "argo-medic-DeadLetterQueue",
    "WorkerLogGroup": "/argo-medic/argo-medic/worker",
    "IngestLogGroup": "/argo-medic/argo-medic/ingest",
    "SweeperLogGroup": "/argo-medic/argo-medic/sweeper",
}

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
PAGE_WIDTH = 1600
ROW = 34  # pixels per grid row


def dashboard_body(template_text):
    """The DashboardBody block scalar, substituted with sample values."""
    lines = template_text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.strip() == "DashboardBody: !Sub") + 2
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        body.append(line[indent:])

    def sub(m):
        token = m.group(1)
        if token.endswith(".Arn"):
            return "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:argo-medic-" + token[:-4]
        return SAMPLE.get(token, token)

    return json.loads(re.sub(r"\$\{([^}]+)\}", sub, "\n".join(body)))


def esc(s):
    return html.escape(str(s))


def inline_md(text):
    text = esc(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return text


def markdown(md):
    out = []
    for line in md.split("\n"):
        if line.startswith("## "):
            out.append(f"<h2>{inline_md(line[3:])}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{inline_md(line[2:])}</h1>")
        elif line.strip():
            out.append(f"<p>{inline_md(line)}</p>")
    return "".join(out)


def series_labels(props):
    """What each metric entry shows, as legend text."""
    labels = []
    for entry in props.get("metrics", []):
        opts = entry[-1] if entry and isinstance(entry[-1], dict) else {}
        if "expression" in opts:
            m = re.match(r"SEARCH\('\{[^,]+,Instance,([^}]+)\} MetricName=\"([^\"]+)\"", opts["expression"])
            labels.append(f"{m.group(2)}: one line per {m.group(1)}" if m else opts["expression"])
        else:
            strings = [e for e in entry if isinstance(e, str)]
            stat = opts.get("stat", props.get("stat", ""))
            labels.append(opts.get("label") or f"{strings[0]} {strings[1]}" + (f" ({stat})" if stat else ""))
    return labels


def sparkline(seed, width, height, color, dashed=False):
    """An illustrative, deterministic line (not data)."""
    h = hashlib.sha256(seed.encode()).digest()
    points = []
    for i in range(25):
        v = (math.sin(i / 3.0 + h[0]) + 1) / 2 * 0.5 + (h[i % 32] / 255) * 0.35
        points.append(f"{i * width / 24:.1f},{height - 6 - v * (height - 14):.1f}")
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{dash} points="{" ".join(points)}"/>'


def chart(seed, n, width, height, threshold=None):
    parts = [f'<svg width="{width}" height="{height}" class="chart">']
    for y in range(1, 4):
        parts.append(f'<line x1="0" x2="{width}" y1="{y * height / 4:.0f}" y2="{y * height / 4:.0f}" stroke="#eee"/>')
    for i in range(max(n, 1)):
        parts.append(sparkline(f"{seed}-{i}", width, height, COLORS[i % len(COLORS)]))
    if threshold:
        parts.append(f'<line x1="0" x2="{width}" y1="{height * 0.22:.0f}" y2="{height * 0.22:.0f}" stroke="#d13212" stroke-dasharray="5 3"/>')
        parts.append(f'<text x="{width - 4}" y="{height * 0.22 - 4:.0f}" text-anchor="end" class="thr">{esc(threshold)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def widget_html(w, unit_w):
    t, p = w["type"], w["properties"]
    left, top = w["x"] * unit_w, w["y"] * ROW
    width, height = w["width"] * unit_w - 8, w["height"] * ROW - 8
    style = f"left:{left + 4}px;top:{top + 4}px;width:{width}px;height:{height}px"
    if t == "text":
        return f'<div class="w text" style="{style}">{markdown(p["markdown"])}</div>'
    title = f'<div class="title">{esc(p.get("title", ""))}</div>'
    if t == "alarm":
        cells = "".join(
            f'<div class="alarm"><span class="ok">OK</span>{esc(a.rsplit(":", 1)[-1].replace("argo-medic-", ""))}</div>'
            for a in p["alarms"]
        )
        return f'<div class="w" style="{style}">{title}<div class="alarms">{cells}</div></div>'
    if t == "log":
        columns = re.findall(r" as (\w+)", p["query"]) or ["@timestamp", "@message"]
        columns = (["@timestamp"] if "@timestamp" in p["query"] else []) + columns
        head = "".join(f"<th>{esc(c)}</th>" for c in columns)
        rows = "".join("<tr>" + "".join("<td>&nbsp;</td>" for _ in columns) + "</tr>" for _ in range(3))
        return (
            f'<div class="w" style="{style}">{title}<div class="query">{esc(p["query"])}</div>'
            f'<table class="log"><tr>{head}</tr>{rows}</table></div>'
        )
    # metric widget: an alarm graph, or metrics and search expressions
    alarms = p.get("annotations", {}).get("alarms")
    chart_h = max(height - 60, 40)
    if alarms:
        name = alarms[0].rsplit(":", 1)[-1].replace("argo-medic-", "")
        body = chart(name, 1, width - 16, chart_h, threshold="threshold") + f'<div class="legend">the metric and threshold of {esc(name)}</div>'
        return f'<div class="w" style="{style}">{title}{body}</div>'
    labels = series_labels(p)
    horizontal = p.get("annotations", {}).get("horizontal", [])
    threshold = f'{horizontal[0]["label"]} = {horizontal[0]["value"]}' if horizontal else None
    legend = "".join(f'<span><i style="background:{COLORS[i % len(COLORS)]}"></i>{esc(l)}</span>' for i, l in enumerate(labels))
    legend_h = 16 * math.ceil(len(labels) / max(1, width // 260))
    body = chart(p.get("title", ""), len(labels), width - 16, max(chart_h - legend_h, 30), threshold)
    return f'<div class="w" style="{style}">{title}{body}<div class="legend">{legend}</div></div>'


CSS = """
body { margin: 0; font-family: 'Amazon Ember', 'Helvetica Neue', Arial, sans-serif; background: #f2f3f3; color: #16191f; }
.banner { background: #232f3e; color: #fff; padding: 10px 16px; font-size: 14px; }
.banner b { color: #ff9900; }
.grid { position: relative; margin: 8px; }
.w { position: absolute; background: #fff; border: 1px solid #d5dbdb; border-radius: 2px; padding: 6px 8px; box-sizing: border-box; overflow: hidden; }
.w.text { background: transparent; border: none; }
.title { font-weight: bold; font-size: 13px; margin-bottom: 4px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
h1 { font-size: 20px; margin: 2px 0 4px; } h2 { font-size: 15px; margin: 0; line-height: 24px; } p { font-size: 12.5px; margin: 0; }
code { background: #eaeded; padding: 0 3px; border-radius: 2px; font-size: 12px; }
.legend { font-size: 11px; color: #545b64; margin-top: 2px; }
.legend span { display: inline-block; margin-right: 12px; white-space: nowrap; }
.legend i { display: inline-block; width: 10px; height: 3px; margin-right: 4px; vertical-align: middle; }
.chart { display: block; }
.thr { font-size: 10px; fill: #d13212; }
.alarms { display: flex; flex-wrap: wrap; gap: 6px; }
.alarm { font-size: 12px; border: 1px solid #d5dbdb; padding: 4px 8px; border-radius: 2px; }
.ok { background: #1d8102; color: #fff; font-size: 10px; padding: 1px 4px; margin-right: 6px; border-radius: 2px; }
.query { font-family: monospace; font-size: 10.5px; color: #545b64; margin-bottom: 4px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
table.log { border-collapse: collapse; width: 100%; font-size: 11px; }
table.log th { text-align: left; border-bottom: 1px solid #d5dbdb; padding: 2px 4px; color: #545b64; }
table.log td { border-bottom: 1px solid #f2f3f3; padding: 2px 4px; height: 14px; }
"""


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "dashboard.png"))
    with open(os.path.join(ROOT, "template.yaml"), encoding="utf-8") as f:
        body = dashboard_body(f.read())
    widgets = body["widgets"]
    unit_w = (PAGE_WIDTH - 16) / 24
    rows = max(w["y"] + w["height"] for w in widgets)
    banner = (
        "<b>A rendering of the DashboardBody</b> of <code style='background:#37475a;color:#fff'>OperatorDashboard</code> "
        "in template.yaml (layout, titles, metrics, alarms, queries) by an HTML approximation in headless Chromium - "
        "<b>not a screenshot of CloudWatch</b>; the lines and alarm states are illustrative, not data."
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{CSS}</style></head><body>"
        f"<div class='banner'>{banner}</div><div class='grid' style='height:{rows * ROW}px'>"
        + "".join(widget_html(w, unit_w) for w in widgets)
        + "</div></body></html>"
    )
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        sys.exit("render-dashboard: Chromium not found (apt-get install -y chromium, or set CHROMIUM)")
    height = rows * ROW + 60
    with tempfile.TemporaryDirectory() as tmp:
        page_path = os.path.join(tmp, "dashboard.html")
        with open(page_path, "w", encoding="utf-8") as f:
            f.write(page)
        subprocess.run(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                f"--user-data-dir={os.path.join(tmp, 'profile')}", f"--window-size={PAGE_WIDTH},{height}",
                f"--screenshot={out}", "file://" + page_path,
            ],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    print(f"render-dashboard: {len(widgets)} widgets -> {out}")


if __name__ == "__main__":
    main()
