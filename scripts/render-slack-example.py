#!/usr/bin/env python3
"""Renders the example escalation of docs/slack.md (the chat.postMessage body between
<!-- slack-example:start --> and <!-- slack-example:end -->) to docs/slack-example.png.

The picture is that JSON drawn by a small HTML approximation of Slack's message layout (header,
sections with mrkdwn, fields, code blocks, buttons with their styles, context) in headless
Chromium. It is not a screenshot of Slack.

    python3 scripts/render-slack-example.py [docs/slack-example.png]

Regenerate the JSON first when the rendering changes (tests/slack.rs,
the_slack_doc_shows_the_message_argo_medic_renders_for_the_sample_hook_failure, with
SLACK_EXAMPLE_OUT=<file>). Needs only Python 3 and Chromium (CHROMIUM=/path overrides).
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIDTH = 800


def example():
    with open(os.path.join(ROOT, "docs", "slack.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme.split("<!-- slack-example:start -->")[1].split("<!-- slack-example:end -->")[0]
    text = section.split("```json\n", 1)[1].split("\n```\n", 1)[0]
    return json.loads(text)


def mrkdwn(text):
    """Slack mrkdwn (already escaped: &amp; &lt; &gt;) to HTML."""
    out = []
    for i, part in enumerate(text.split("```")):
        if i % 2 == 1:
            out.append(f"<pre>{part}</pre>")
            continue
        part = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r'<a href="\1">\2</a>', part)
        part = re.sub(r"`([^`]+)`", r"<code>\1</code>", part)
        part = re.sub(r"(^|[\s(])\*([^*\n]+)\*", r"\1<b>\2</b>", part)
        part = part.replace(":rotating_light:", "🚨").replace(":white_check_mark:", "✅").replace(":eyes:", "👀")
        part = part.replace(":hammer_and_wrench:", "🛠️").replace(":zzz:", "💤").replace(":link:", "🔗")
        out.append(part.replace("\n", "<br>"))
    return "".join(out)


def block_html(b):
    t = b["type"]
    if t == "header":
        return f'<div class="header">{html.escape(b["text"]["text"])}</div>'
    if t == "section":
        parts = []
        if "text" in b:
            parts.append(f'<div class="section">{mrkdwn(b["text"]["text"])}</div>')
        if "fields" in b:
            cells = "".join(f'<div class="field">{mrkdwn(f["text"])}</div>' for f in b["fields"])
            parts.append(f'<div class="fields">{cells}</div>')
        return "".join(parts)
    if t == "actions":
        buttons = "".join(
            f'<span class="button {e.get("style", "")}">{html.escape(e["text"]["text"])}</span>' for e in b["elements"]
        )
        return f'<div class="actions">{buttons}</div>'
    if t == "context":
        return '<div class="context">' + " ".join(mrkdwn(e["text"]) for e in b["elements"]) + "</div>"
    return ""


CSS = """
body { margin: 0; padding: 16px 20px; font-family: 'Lato', 'Helvetica Neue', Arial, sans-serif; font-size: 15px; color: #1d1c1d; background: #fff; width: 760px; }
.msg { display: flex; gap: 10px; }
.avatar { width: 36px; height: 36px; border-radius: 4px; background: #1d3b53; color: #fff; font-weight: bold; display: flex; align-items: center; justify-content: center; flex: none; }
.who { font-weight: 900; } .app { font-size: 10px; background: #e8e8e8; color: #616061; padding: 1px 3px; border-radius: 2px; margin: 0 4px; } .time { color: #616061; font-size: 12px; }
.header { font-size: 18px; font-weight: 900; margin: 6px 0 4px; }
.section { margin: 4px 0; line-height: 1.45; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 6px 16px; margin: 6px 0; line-height: 1.45; }
a { color: #1264a3; text-decoration: none; }
code { font-family: Monaco, Menlo, monospace; font-size: 12px; color: #e01e5a; background: #f8f8f8; border: 1px solid #e8e8e8; border-radius: 3px; padding: 0 3px; }
pre { font-family: Monaco, Menlo, monospace; font-size: 12px; background: #f8f8f8; border: 1px solid #e8e8e8; border-radius: 4px; padding: 8px; margin: 4px 0; white-space: pre-wrap; }
.actions { margin: 8px 0 4px; display: flex; gap: 8px; flex-wrap: wrap; }
.button { border: 1px solid #bbb; border-radius: 4px; padding: 4px 12px; font-weight: bold; font-size: 14px; }
.button.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
.button.danger { background: #fff; color: #e01e5a; border-color: #e01e5a; }
.context { color: #616061; font-size: 12px; margin-top: 4px; }
"""


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "slack-example.png"))
    message = example()
    blocks = "".join(block_html(b) for b in message["blocks"])
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title></title><style>{CSS}</style></head><body>"
        "<div class='msg'><div class='avatar'>AM</div><div>"
        "<span class='who'>Argo Medic</span><span class='app'>APP</span><span class='time'>12:30</span>"
        f"{blocks}</div></div>"
        "<script>document.title = 'h=' + document.documentElement.scrollHeight</script></body></html>"
    )
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        sys.exit("render-slack-example: Chromium not found (apt-get install -y chromium, or set CHROMIUM)")
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        page_path = os.path.join(tmp, "message.html")
        with open(page_path, "w", encoding="utf-8") as f:
            f.write(page)
        profile = f"--user-data-dir={os.path.join(tmp, 'profile')}"
        # The page's height, measured by Chromium itself (the page writes it into its title).
        dom = subprocess.run(
            [chromium, *flags, profile, f"--window-size={WIDTH},600", "--dump-dom", "file://" + page_path],
            capture_output=True, text=True, check=True,
        ).stdout
        height = int(re.search(r"<title>h=(\d+)</title>", dom).group(1)) + 4
        subprocess.run(
            [chromium, *flags, profile, f"--window-size={WIDTH},{height}", f"--screenshot={out}", "file://" + page_path],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    print(f"render-slack-example: {len(message['blocks'])} blocks -> {out}")


if __name__ == "__main__":
    main()
