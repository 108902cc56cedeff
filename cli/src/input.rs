//! Reading Applications, histories and configuration from files, directories and stdin.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use medic_core::{Application, History, PolicyConfig};
use serde::de::DeserializeOwned;

/// One Application and where it came from (for messages).
#[derive(Debug, Clone)]
pub struct LoadedApp {
    pub source: String,
    pub app: Application,
}

/// Parses JSON into `T`, naming the path of the offending field on error.
pub fn parse_json<T: DeserializeOwned>(text: &str, source: &str) -> Result<T> {
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("{source}: invalid JSON: {e}"))?;
    medic_core::app::strip_nulls(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { String::new() } else { format!(" at `{path}`") };
        anyhow::anyhow!("{source}: invalid JSON{at}: {}", e.inner())
    })
}

/// Parses one Application object or a list response `{"items": [...]}`.
pub fn parse_apps(text: &str, source: &str) -> Result<Vec<LoadedApp>> {
    let value: serde_json::Value = parse_json(text, source)?;
    // `argocd app list -o json` prints a bare array of Applications.
    if let Some(items) = value.as_array() {
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = format!("{source}#[{i}]");
                if !item.get("metadata").is_some_and(serde_json::Value::is_object) {
                    bail!("{at}: not an Application (no `metadata` object), found {}", medic_adapters::config::json_kind(item));
                }
                let text = serde_json::to_string(item).context("re-encoding an array item")?;
                Ok(LoadedApp { app: parse_json(&text, &at)?, source: at })
            })
            .collect();
    }
    let Some(object) = value.as_object() else {
        bail!(
            "{source}: expected an Application object, a list response {{\"items\": [...]}} or an array of Applications (argocd app list -o json), found {}",
            medic_adapters::config::json_kind(&value)
        );
    };
    if let Some(items) = object.get("items") {
        if !items.is_array() && !items.is_null() {
            bail!("{source}: `items` must be an array of Applications, found {}", medic_adapters::config::json_kind(items));
        }
        let list: medic_core::ApplicationList = parse_json(text, source)?;
        return Ok(list.items.into_iter().enumerate().map(|(i, app)| LoadedApp { source: format!("{source}#items[{i}]"), app }).collect());
    }
    if !object.contains_key("metadata") {
        bail!(
            "{source}: not an Application: the object has no `metadata` (keys: {})",
            object.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(vec![LoadedApp { source: source.to_owned(), app: parse_json(text, source)? }])
}

/// Reads `-` (stdin), a file, or every `*.json` file of a directory (sorted by name).
pub fn read_apps(path: &str) -> Result<Vec<LoadedApp>> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
        return parse_apps(&text, "<stdin>");
    }
    let p = Path::new(path);
    if p.is_dir() {
        let mut apps = Vec::new();
        for file in json_files(p)? {
            apps.extend(parse_apps(&read(&file)?, &file.display().to_string())?);
        }
        if apps.is_empty() {
            bail!("{path}: the directory holds no *.json Application files");
        }
        return Ok(apps);
    }
    parse_apps(&read(p)?, path)
}

/// The `*.json` files of a directory, sorted by name.
pub fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

pub fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

pub fn read_history(path: &str) -> Result<History> {
    parse_json(&read(Path::new(path))?, path)
}

pub fn read_config(path: &str) -> Result<PolicyConfig> {
    parse_json(&read(Path::new(path))?, path)
}
