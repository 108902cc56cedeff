//! Output for humans: aligned tables and text blocks.

use medic_core::{CATALOGUE, Decision};

/// Left-aligned columns separated by two spaces; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len() - 1;
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            out.push_str(c);
            if i < last {
                out.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// One line of a table whose column widths are fixed in advance (rows that stream): a cell wider
/// than its column pushes the rest right rather than being cut.
pub fn row(cells: &[String], widths: &[usize]) -> String {
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        out.push_str(c);
        if i + 1 < cells.len() {
            let width = widths.get(i).copied().unwrap_or(0);
            out.push_str(&" ".repeat(width.saturating_sub(c.chars().count()) + 2));
        }
    }
    out.trim_end().to_owned() + "\n"
}

/// Shortens to `max` characters with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_owned() } else { s.chars().take(max.saturating_sub(1)).collect::<String>() + "…" }
}

pub fn decisions_table(rows: &[(String, &Decision)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, d)| vec![label.clone(), d.failure_mode.to_string(), d.action.to_string(), truncate(&d.reason, 110)])
        .collect();
    table(&["APP", "FAILURE MODE", "ACTION", "REASON"], &rows)
}

/// `medic freeze list`: one row per freeze, in force first.
pub fn freezes_table(freezes: &[medic_core::freeze::Freeze], now: chrono::DateTime<chrono::Utc>) -> String {
    let mut sorted: Vec<_> = freezes.iter().collect();
    sorted.sort_by_key(|f| (!f.active(now), f.until));
    let secs = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|f| {
            let state = if f.active(now) {
                "frozen"
            } else if now < f.at {
                "later"
            } else {
                "ended"
            };
            vec![f.id.clone(), f.scope.to_string(), state.to_owned(), secs(f.until), f.by.clone(), truncate(&f.reason, 80)]
        })
        .collect();
    if rows.is_empty() {
        return "no freezes\n".to_owned();
    }
    table(&["ID", "SCOPE", "STATE", "UNTIL", "BY", "REASON"], &rows)
}

/// `medic freeze list`'s second table: Argo CD's own sync windows, one row per window.
pub fn sync_windows_table(projects: &[medic_adapters::argocd::ProjectSyncWindows]) -> String {
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let rows: Vec<Vec<String>> = projects
        .iter()
        .flat_map(|p| p.windows.iter().map(move |(w, active)| (p, w, *active)))
        .map(|(p, w, active)| {
            let zone = if w.time_zone.is_empty() { "UTC" } else { w.time_zone.as_str() };
            vec![
                p.project.clone(),
                w.kind.clone(),
                w.schedule.clone(),
                w.duration.clone(),
                zone.to_owned(),
                truncate(&window_targets(w), 60),
                yes_no(w.manual_sync),
                yes_no(active),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "Argo CD: no sync windows in the projects this token may see\n".to_owned();
    }
    let mut out = String::from("Argo CD's own sync windows (a deny window holds Argo Medic's syncs too, unless it allows manual syncs):\n");
    out.push_str(&table(&["PROJECT", "KIND", "SCHEDULE", "DURATION", "TIME ZONE", "APPLIES TO", "MANUAL SYNC", "ACTIVE NOW"], &rows));
    out
}

/// What a window applies to, as argocd's `proj windows list` names it: applications, namespaces
/// and clusters, matched with `or` (or `and` with `andOperator`).
fn window_targets(w: &medic_adapters::argocd::SyncWindow) -> String {
    let parts: Vec<String> = [("apps", &w.applications), ("namespaces", &w.namespaces), ("clusters", &w.clusters)]
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(what, list)| format!("{what} {}", list.join(",")))
        .collect();
    if parts.is_empty() {
        return "nothing".to_owned();
    }
    parts.join(if w.and_operator { " and " } else { " or " })
}

pub fn decision_text(d: &Decision) -> String {
    let mut out = format!("{}: {} ({})\n  reason: {}\n", d.app, d.action, d.failure_mode, d.reason);
    if !d.rule.is_empty() {
        out.push_str(&format!("  rule: {}\n", d.rule));
        let read = map_rows_read(d);
        if !read.is_empty() {
            out.push_str(&format!("  read: {}\n", read.join(", ")));
        }
    }
    if let Some(trust) = &d.trust {
        let what = match trust.level {
            medic_core::trust::TrustLevel::Act => "performed",
            medic_core::trust::TrustLevel::Propose => "offered to a person in Slack, performed when they press it",
            medic_core::trust::TrustLevel::Observe => "recorded, not performed",
        };
        out.push_str(&format!("  trust: {} ({what}; set by {})\n", trust.level, trust.why));
    }
    if let Some(route) = &d.route {
        let channel = if route.channel.is_empty() { "the deployment's channel" } else { route.channel.as_str() };
        let mention = if route.mention.is_empty() { String::new() } else { format!(", mentioning {}", route.mention) };
        out.push_str(&format!("  told in: {channel}{mention}\n"));
    }
    if let Some(after) = d.retry_after_secs {
        out.push_str(&format!("  look again in: {after}s\n"));
    }
    if let Some(key) = &d.idempotency_key {
        out.push_str(&format!("  idempotency key: {key}\n"));
    }
    if let Some(plan) = &d.sync {
        let rev = if plan.revision.is_empty() { "target revision" } else { plan.revision.as_str() };
        out.push_str(&format!("  sync: {rev}, prune={}, options=[{}]\n", plan.prune, plan.sync_options.join(", ")));
    }
    if !d.human_actions.is_empty() {
        let names: Vec<String> =
            d.human_actions.iter().map(|a| serde_json::to_value(a).unwrap().as_str().unwrap_or_default().to_owned()).collect();
        let recommended = d
            .recommended
            .map(|a| format!(" (recommended: {})", serde_json::to_value(a).unwrap().as_str().unwrap_or_default()))
            .unwrap_or_default();
        out.push_str(&format!("  a human may: {}{recommended}\n", names.join(", ")));
    }
    if !d.evidence.is_empty() {
        out.push_str("  evidence:\n");
        for e in &d.evidence {
            out.push_str(&format!("    {}: {}\n", e.field, truncate(&e.value, 200)));
        }
    }
    out
}

pub fn catalogue_table() -> String {
    let rows: Vec<Vec<String>> = CATALOGUE
        .iter()
        .map(|e| {
            let ladder: Vec<&str> = e.ladder.iter().map(|r| r.as_str()).collect();
            vec![
                e.id.to_string(),
                e.default_action.to_string(),
                if ladder.is_empty() { "-".into() } else { ladder.join(" → ") },
                e.title.to_owned(),
            ]
        })
        .collect();
    table(&["FAILURE MODE", "DEFAULT", "LADDER", "TITLE"], &rows)
}

/// The rows of the map of the Application the decision's rule read (`field status.operationState.phase`).
pub fn map_rows_read(d: &Decision) -> Vec<String> {
    medic_core::app_map::rows_read_by(&d.rule).iter().map(|r| r.name()).collect()
}

/// A decision as `decide -o json` prints it: the decision, and the map rows its rule read (`read`).
pub fn decision_value(d: &Decision) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(d)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("read".into(), serde_json::Value::from(map_rows_read(d)));
    }
    Ok(value)
}

/// [`decisions_table`] with the rule and the idempotency key, and the reason whole.
pub fn decisions_wide(rows: &[(String, &Decision)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, d)| {
            vec![
                label.clone(),
                d.failure_mode.to_string(),
                d.action.to_string(),
                if d.rule.is_empty() { "-".into() } else { d.rule.to_string() },
                d.idempotency_key.as_ref().map(ToString::to_string).unwrap_or_else(|| "-".into()),
                d.reason.clone(),
            ]
        })
        .collect();
    table(&["APP", "FAILURE MODE", "ACTION", "RULE", "IDEMPOTENCY KEY", "REASON"], &rows)
}

/// The map of the Application, one row a line: kind, key, and what Argo Medic does with it.
pub fn map_table() -> String {
    use medic_core::app_map::{Use, rows};
    let rows: Vec<Vec<String>> = rows()
        .map(|r| {
            let used = match r.used {
                Use::Rule { rules, .. } => format!("rule {}", rules.join(", ")),
                Use::Carried(_) => "carried".to_owned(),
                Use::NotRelevant(_) => "not relevant".to_owned(),
            };
            vec![r.kind.as_str().to_owned(), r.key.to_owned(), if r.modelled.is_empty() { "-".into() } else { r.modelled.to_owned() }, used]
        })
        .collect();
    table(&["KIND", "KEY", "MODELLED AS", "ARGO MEDIC"], &rows)
}

/// The map of the Application, a JSON object a row.
pub fn map_values() -> Vec<serde_json::Value> {
    use medic_core::app_map::{Use, rows};
    rows()
        .map(|r| {
            let (used, rules, why) = match r.used {
                Use::Rule { rules, .. } => ("rule", rules.to_vec(), ""),
                Use::Carried(why) => ("carried", Vec::new(), why),
                Use::NotRelevant(why) => ("not-relevant", Vec::new(), why),
            };
            serde_json::json!({
                "kind": r.kind.as_str(), "key": r.key, "meaning": r.meaning, "argocd": r.controller,
                "modelled": r.modelled, "used": used, "rules": rules, "why": why,
            })
        })
        .collect()
}

/// The catalogue as the Markdown table docs/decisions.md embeds (a test keeps the two identical).
pub fn catalogue_markdown() -> String {
    let mut out = String::from("| failure mode | what it is | first action | ladder |\n|---|---|---|---|\n");
    for e in CATALOGUE {
        let ladder: Vec<&str> = e.ladder.iter().map(|r| r.as_str()).collect();
        let ladder = if ladder.is_empty() { "–".to_owned() } else { ladder.join(" → ") };
        out.push_str(&format!("| `{}` | {} | {} | {} |\n", e.id, e.title, e.default_action, ladder));
    }
    out
}
