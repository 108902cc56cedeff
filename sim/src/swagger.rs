//! Checking logged traffic against Argo CD's own Swagger spec (`shared/argocd/swagger.json`,
//! read from the reference tree, see [`argocd_swagger_path`]).
//!
//! The simulator and the client are both written from the same research notes; checking what
//! actually crossed the wire against the spec Argo CD ships catches what both got wrong alike:
//! a misspelt query parameter (the gateway silently ignores it), a body field the server does
//! not know (silently dropped), a wrongly typed field (a 400 in production), a response shape the
//! client's types would not expect.
//!
//! # Why hand-written
//!
//! The spec is Swagger 2.0, not OpenAPI 3, so the OpenAPI crates (`openapiv3` and friends) do not
//! read it; generic JSON Schema validators (`jsonschema`) would need the Swagger dialect
//! translated first (`definitions` refs, `format: int64` on strings), and neither could express
//! the deliberate exceptions below, which depend on the definition and on the direction of
//! travel. The subset Argo CD's spec uses (`$ref` into `definitions`, `allOf`, `type`, `format`,
//! `properties`, `additionalProperties`, `items`, query/path/body parameters) fits in this file,
//! without dependencies and without network access.
//!
//! # Known wire differences, handled deliberately (docs/argo-cd-behaviour.md §2)
//!
//! - **int64 is a JSON number.** Argo CD encodes with Go's `encoding/json`, not protobuf JSON:
//!   every `format: int64`/`int32` value is a number even where the spec says `type: string`
//!   (`sourcePositions`). A string there is a violation in both directions: Go would refuse it.
//! - **The `hook` sync strategy is flattened.** `SyncStrategyHook` embeds `SyncStrategyApply`
//!   inline, so the wire has `{"hook":{"force":true}}`; the spec's `hook.syncStrategyApply` is
//!   ignored by the server, so sending it is flagged.
//! - **ResourceNode carries ResourceRef inline** (`group`, `version`, `kind`, `namespace`,
//!   `name`, `uid`). This copy of the spec declares that with `allOf`; the validator merges
//!   `allOf`, and adds ResourceRef to ResourceNode even if a spec version lacks it.
//! - **`runtimeError`** is grpc-gateway v1's `{error, code, message, details?}`. Error answers are
//!   checked against it, plus what the gateway guarantees: `error` equals `message`, and the
//!   HTTP status is the one its table gives `code`. The 415 is plain text from an HTTP
//!   middleware, not the gateway: it is checked as text.
//! - **`fields` on List** is undeclared but honoured by Argo CD's list forwarder (§1.6). In a
//!   field-masked List, `items[].status.operationState.operation.sync` holds the operation's
//!   **syncResult** (the forwarder's whitelist maps that key to it), so it is checked as a
//!   `v1alpha1SyncOperationResult` there.
//! - **Free-form JSON**: `FieldsV1` (managedFields) and `RawExtension` (Helm `valuesObject`) are
//!   declared as `{Raw: bytes}` but are the raw embedded JSON on the wire.
//! - **`null`** is accepted anywhere: Go encodes nil maps, slices and pointers without
//!   `omitempty` as `null` (field-masked List items are full of them).
//!
//! Undeclared properties are violations in requests (the client must not send what the server
//! drops) and in responses too (outside the exceptions above, the simulator must not invent).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::http_status_for_code;
use crate::log::LoggedRequest;

/// Query parameters Argo CD honours although the spec does not declare them, by operationId.
const UNDECLARED_QUERY_PARAMS: &[(&str, &str)] = &[("ApplicationService_List", "fields")];

/// Definitions whose wire form is arbitrary JSON.
const FREE_FORM_DEFINITIONS: &[&str] = &["v1FieldsV1", "runtimeRawExtension"];

/// Definitions whose wire properties are another definition's (Go `json:",inline"`), replacing
/// the declared ones.
const FLATTENED_DEFINITIONS: &[(&str, &str)] = &[("v1alpha1SyncStrategyHook", "v1alpha1SyncStrategyApply")];

/// Definitions that also carry another definition's properties inline, on top of their own.
const INLINE_DEFINITIONS: &[(&str, &str)] = &[("v1alpha1ResourceNode", "v1alpha1ResourceRef")];

/// How deep `$ref`/`allOf` resolution may nest before the spec is considered cyclic.
const MAX_DEPTH: usize = 128;

/// A loaded Swagger 2.0 spec, ready to check [`LoggedRequest`]s.
#[derive(Debug, Clone)]
pub struct SwaggerSpec {
    operations: Vec<Operation>,
    definitions: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Operation {
    method: String,
    template: String,
    segments: Vec<Segment>,
    id: String,
    spec: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param,
}

/// Which way a value travels: requests may not carry anything undeclared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Request,
    Response,
}

/// SHA-256 of Argo CD v3.5.1's `assets/swagger.json`, unmodified.
pub const ARGOCD_V3_5_1_SHA256: &str = "5cfd43dfd31446d875ab35244b19f2aaccc8120c8ddfafd90e2c25b668acaee6";

/// Where Argo CD's spec is read from: `$MEDIC_ARGOCD_SWAGGER`, else the project's reference tree
/// (`shared/argocd/swagger.json` beside the repository). The spec is not copied into the
/// repository: it is Argo CD's file, and the reference tree is where CI and developers have it.
pub fn argocd_swagger_path() -> std::path::PathBuf {
    std::env::var_os("MEDIC_ARGOCD_SWAGGER")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("../shared/argocd/swagger.json"))
}

/// The environment variable naming a file the skipped checks are appended to (one line each),
/// so `make test` can count them in its summary.
pub const SKIP_LOG_ENV: &str = "MEDIC_SKIP_LOG";

/// Says loudly that a check did not run: on stderr, and as a line in `$MEDIC_SKIP_LOG`, which
/// `make test` lists at its end.
pub fn record_skipped(line: &str) {
    eprintln!("SKIPPED {line}");
    if let Some(log) = std::env::var_os(SKIP_LOG_ENV) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Argo CD's spec for the check named `check`, or `None` when the spec is not on this machine: a
/// clone outside the workspace has no `../shared`. Then the check is skipped loudly (stderr, and a
/// line in `$MEDIC_SKIP_LOG` for `make test`'s summary) — except under CI (`CI` set), where
/// ../shared always exists and a missing spec is a failure. A spec that is there but not Argo
/// CD's unmodified file is always a failure.
pub fn reference_spec(check: &str) -> Option<SwaggerSpec> {
    let path = argocd_swagger_path();
    if !path.exists() && std::env::var_os("CI").is_none_or(|v| v.is_empty()) {
        let line = format!("{check}: skipped, Argo CD's swagger.json is not at {} (set MEDIC_ARGOCD_SWAGGER to run it)", path.display());
        record_skipped(&line);
        return None;
    }
    Some(SwaggerSpec::argocd_v3_5_1().unwrap_or_else(|e| panic!("{check}: {e}")))
}

impl SwaggerSpec {
    /// Argo CD v3.5.1's spec from [`argocd_swagger_path`], checked to be the unmodified file.
    pub fn argocd_v3_5_1() -> Result<Self, String> {
        use sha2::Digest;
        let path = argocd_swagger_path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (set MEDIC_ARGOCD_SWAGGER to Argo CD v3.5.1's swagger.json)", path.display()))?;
        let hex = hex::encode(sha2::Sha256::digest(text.as_bytes()));
        if hex != ARGOCD_V3_5_1_SHA256 {
            return Err(format!("{} is not Argo CD v3.5.1's unmodified swagger.json (sha256 {hex})", path.display()));
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Self::from_value(value)
    }

    /// Reads a Swagger 2.0 JSON file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_value(value).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Builds from an already parsed spec.
    pub fn from_value(spec: Value) -> Result<Self, String> {
        if spec.get("swagger").and_then(Value::as_str) != Some("2.0") {
            return Err("not a Swagger 2.0 document".into());
        }
        let paths = spec.get("paths").and_then(Value::as_object).ok_or("no paths")?;
        let definitions = spec.get("definitions").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut operations = Vec::new();
        for (template, item) in paths {
            let Some(item) = item.as_object() else { continue };
            let segments = parse_template(template);
            for (method, op) in item {
                if !matches!(method.as_str(), "get" | "put" | "post" | "delete" | "patch" | "head" | "options") {
                    continue;
                }
                operations.push(Operation {
                    method: method.to_uppercase(),
                    template: template.clone(),
                    segments: segments.clone(),
                    id: op.get("operationId").and_then(Value::as_str).unwrap_or_default().to_string(),
                    spec: op.clone(),
                });
            }
        }
        Ok(SwaggerSpec { operations, definitions })
    }

    /// Violations of `value` against the spec's definition `definition` (as a response body, so
    /// unknown members are violations), each prefixed with `context`: for objects that do not travel
    /// over a logged request, such as the decision corpus's Applications.
    pub fn check_definition(&self, definition: &str, value: &Value, context: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !self.definitions.contains_key(definition) {
            return vec![format!("{context}: the spec has no definition {definition}")];
        }
        let mut walker = Walker { spec: self, direction: Direction::Response, out: &mut out, context };
        walker.check(&json_ref(definition), value, definition, 0);
        out
    }

    /// Violations in what the client sent: path and method, query parameters, content type,
    /// and the body against the operation's body schema.
    pub fn check_request(&self, r: &LoggedRequest) -> Vec<String> {
        let op = match self.find(&r.method, &r.path) {
            Ok(op) => op,
            Err(e) => return vec![e],
        };
        let context = format!("{} {} request", op.method, op.template);
        let mut out = Vec::new();
        self.check_query(op, r, &context, &mut out);
        if r.method != "GET" && r.content_type.as_deref() != Some("application/json") {
            out.push(format!("{context}: Content-Type is {:?}; Argo CD answers 415 unless it is exactly application/json", r.content_type));
        }
        let body_param = parameters(op).find(|p| p.get("in").and_then(Value::as_str) == Some("body"));
        match (body_param, &r.body) {
            (None, _) if !r.raw_body.trim().is_empty() => {
                out.push(format!("{context}: the operation takes no body, got {:?}", r.raw_body));
            }
            (None, _) => {}
            (Some(_), None) if !r.raw_body.trim().is_empty() => {
                out.push(format!("{context}: the body is not JSON: {:?}", r.raw_body));
            }
            (Some(param), None) => {
                if param.get("required").and_then(Value::as_bool) == Some(true) {
                    out.push(format!("{context}: the body is required"));
                }
            }
            (Some(param), Some(body)) => {
                let schema = param.get("schema").unwrap_or(&Value::Null);
                let mut walker = Walker { spec: self, direction: Direction::Request, out: &mut out, context: &context };
                walker.check(schema, body, "body", 0);
            }
        }
        out
    }

    /// Violations in what the server answered: a 2xx JSON body against the 200 schema, an
    /// error body against `runtimeError` (the 415 as plain text). A dropped connection (status
    /// 0) answered nothing and has nothing to check.
    pub fn check_response(&self, r: &LoggedRequest) -> Vec<String> {
        if r.status == 0 {
            return Vec::new();
        }
        let op = match self.find(&r.method, &r.path) {
            Ok(op) => op,
            Err(e) => return vec![e],
        };
        let context = format!("{} {} response {}", op.method, op.template, r.status);
        let mut out = Vec::new();
        if r.status == 415 {
            if r.response.as_str().map(str::trim) != Some("Invalid content type") {
                out.push(format!("{context}: expected the plain text `Invalid content type`, got {}", r.response));
            }
            return out;
        }
        if r.response.is_string() {
            out.push(format!("{context}: the body is not JSON: {}", r.response));
            return out;
        }
        let responses = op.spec.get("responses");
        let schema = if (200..300).contains(&r.status) {
            responses.and_then(|rs| rs.get("200")).and_then(|r| r.get("schema"))
        } else {
            self.check_error_shape(r, &context, &mut out);
            responses.and_then(|rs| rs.get("default")).and_then(|r| r.get("schema"))
        };
        let masked_list = op.id == "ApplicationService_List"
            && (200..300).contains(&r.status)
            && r.query.iter().any(|(k, v)| k == "fields" && !v.is_empty());
        let mut response = r.response.clone();
        let sync_results = match masked_list {
            true => take_masked_sync_results(&mut response),
            false => Vec::new(),
        };
        let mut walker = Walker { spec: self, direction: Direction::Response, out: &mut out, context: &context };
        match schema {
            Some(schema) => walker.check(schema, &response, "response", 0),
            None => walker.out.push(format!("{context}: the spec declares no schema for this status")),
        }
        let sync_result = json_ref("v1alpha1SyncOperationResult");
        for (i, value) in &sync_results {
            let at = format!("response.items[{i}].status.operationState.operation.sync");
            walker.check(&sync_result, value, &at, 0);
        }
        out
    }

    /// What grpc-gateway v1 guarantees beyond the `runtimeError` schema.
    fn check_error_shape(&self, r: &LoggedRequest, context: &str, out: &mut Vec<String>) {
        let body = &r.response;
        let error = body.get("error").and_then(Value::as_str);
        let message = body.get("message").and_then(Value::as_str);
        if error.is_none() || error != message {
            out.push(format!("{context}: `error` and `message` must be the same string: {body}"));
        }
        match body.get("code").and_then(Value::as_i64) {
            None => out.push(format!("{context}: no numeric gRPC `code`: {body}")),
            Some(code) => {
                if http_status_for_code(code) != Some(r.status) {
                    out.push(format!("{context}: gRPC code {code} is not answered with HTTP {}", r.status));
                }
            }
        }
    }

    fn check_query(&self, op: &Operation, r: &LoggedRequest, context: &str, out: &mut Vec<String>) {
        let declared: BTreeMap<&str, &Value> = parameters(op)
            .filter(|p| p.get("in").and_then(Value::as_str) == Some("query"))
            .filter_map(|p| Some((p.get("name")?.as_str()?, p)))
            .collect();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, value) in &r.query {
            *seen.entry(name.as_str()).or_default() += 1;
            let Some(param) = declared.get(name.as_str()) else {
                if !UNDECLARED_QUERY_PARAMS.contains(&(op.id.as_str(), name.as_str())) {
                    out.push(format!("{context}: query parameter `{name}` is not declared for {}", op.id));
                }
                continue;
            };
            let ty = match param.get("type").and_then(Value::as_str) {
                Some("array") => param.get("items").and_then(|i| i.get("type")).and_then(Value::as_str),
                other => other,
            };
            let ok = match ty {
                Some("boolean") => matches!(value.as_str(), "true" | "false"),
                Some("integer") => value.parse::<i64>().is_ok(),
                Some("number") => value.parse::<f64>().is_ok(),
                _ => true,
            };
            if !ok {
                out.push(format!("{context}: query parameter `{name}={value}` is not a {}", ty.unwrap_or("value")));
            }
        }
        for (name, count) in seen {
            let repeatable = declared.get(name).and_then(|p| p.get("type")).and_then(Value::as_str) == Some("array");
            if count > 1 && declared.contains_key(name) && !repeatable {
                out.push(format!("{context}: query parameter `{name}` is repeated but not an array"));
            }
        }
    }

    fn find(&self, method: &str, path: &str) -> Result<&Operation, String> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let matching: Vec<&Operation> = self
            .operations
            .iter()
            .filter(|op| {
                op.segments.len() == segments.len()
                    && op.segments.iter().zip(&segments).all(|(s, actual)| match s {
                        Segment::Literal(lit) => lit == actual,
                        Segment::Param => !actual.is_empty(),
                    })
            })
            .collect();
        // The most specific template wins (`/applications/manifestsWithFiles` over `{name}`).
        let literals = |op: &Operation| op.segments.iter().filter(|s| matches!(s, Segment::Literal(_))).count();
        let best = matching.iter().map(|op| literals(op)).max();
        let best: Vec<&Operation> = matching.into_iter().filter(|op| Some(literals(op)) == best).collect();
        if best.is_empty() {
            return Err(format!("{method} {path}: no such path in the spec"));
        }
        best.iter().find(|op| op.method == method).copied().ok_or_else(|| {
            let declared: Vec<&str> = best.iter().map(|op| op.method.as_str()).collect();
            format!("{method} {path}: method not declared for {} (declared: {})", best[0].template, declared.join(", "))
        })
    }

    /// Every leaf of the definition `definition`, as `(path, type)`: dotted member names from the
    /// definition's root, `[]` for a list's items, `{}` for a map's values; a leaf is a member
    /// whose schema has no properties of its own (a scalar, a list of scalars, a free map). A
    /// definition met again beneath itself ends the path there, typed `recursive <name>`.
    pub fn leaves(&self, definition: &str) -> Vec<(String, String)> {
        fn walk(spec: &SwaggerSpec, schema: &Value, path: String, seen: &mut Vec<String>, out: &mut Vec<(String, String)>) {
            let (name, schema) = spec.resolve(schema);
            if let Some(name) = name {
                if seen.iter().any(|s| s == name) {
                    out.push((path, format!("recursive {name}")));
                    return;
                }
                seen.push(name.to_owned());
            }
            match schema.get("properties").and_then(Value::as_object) {
                Some(props) if !props.is_empty() => {
                    for (member, sub) in props {
                        let at = if path.is_empty() { member.clone() } else { format!("{path}.{member}") };
                        let (_, resolved) = spec.resolve(sub);
                        match resolved.get("type").and_then(Value::as_str) {
                            Some("array") if resolved.get("items").is_some_and(|i| i.get("$ref").is_some()) => {
                                walk(spec, &resolved["items"], format!("{at}[]"), seen, out)
                            }
                            Some("object") if resolved.get("additionalProperties").is_some_and(|i| i.get("$ref").is_some()) => {
                                walk(spec, &resolved["additionalProperties"], format!("{at}{{}}"), seen, out)
                            }
                            _ => walk(spec, sub, at, seen, out),
                        }
                    }
                }
                _ => {
                    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("object");
                    out.push((path, kind.to_owned()));
                }
            }
            if name.is_some() {
                seen.pop();
            }
        }
        let mut out = Vec::new();
        if self.definitions.contains_key(definition) {
            walk(self, &json_ref(definition), String::new(), &mut Vec::new(), &mut out);
        }
        out
    }

    fn definition(&self, name: &str) -> Option<&Value> {
        self.definitions.get(name)
    }

    /// Follows `$ref`s; returns the definition name reached last, if any.
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> (Option<&'a str>, &'a Value) {
        let mut name = None;
        for _ in 0..MAX_DEPTH {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { break };
            let Some(target) = reference.strip_prefix("#/definitions/") else { break };
            match self.definitions.get_key_value(target) {
                Some((key, def)) => {
                    name = Some(key.as_str());
                    schema = def;
                }
                None => break,
            }
        }
        (name, schema)
    }
}

fn json_ref(definition: &str) -> Value {
    let mut schema = Map::new();
    schema.insert("$ref".into(), Value::String(format!("#/definitions/{definition}")));
    Value::Object(schema)
}

/// Moves each item's `status.operationState.operation.sync` out of a field-masked List answer.
fn take_masked_sync_results(response: &mut Value) -> Vec<(usize, Value)> {
    let Some(items) = response.get_mut("items").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    items
        .iter_mut()
        .enumerate()
        .filter_map(|(i, item)| {
            let operation = item.pointer_mut("/status/operationState/operation")?.as_object_mut()?;
            Some((i, operation.remove("sync")?))
        })
        .collect()
}

fn parse_template(template: &str) -> Vec<Segment> {
    template
        .trim_start_matches('/')
        .split('/')
        .map(|s| match s.starts_with('{') && s.ends_with('}') {
            true => Segment::Param,
            false => Segment::Literal(s.to_string()),
        })
        .collect()
}

fn parameters(op: &Operation) -> impl Iterator<Item = &Value> {
    op.spec.get("parameters").and_then(Value::as_array).into_iter().flatten()
}

struct Walker<'a> {
    spec: &'a SwaggerSpec,
    direction: Direction,
    out: &'a mut Vec<String>,
    context: &'a str,
}

impl Walker<'_> {
    fn violation(&mut self, at: &str, problem: String) {
        self.out.push(format!("{}: {at}: {problem}", self.context));
    }

    fn check(&mut self, schema: &Value, value: &Value, at: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.violation(at, "schema nests too deep (cyclic $ref?)".into());
            return;
        }
        let (def_name, schema) = self.spec.resolve(schema);
        if value.is_null() {
            return;
        }
        if def_name.is_some_and(|d| FREE_FORM_DEFINITIONS.contains(&d)) {
            return;
        }
        let format = schema.get("format").and_then(Value::as_str);
        let declared_type = schema.get("type").and_then(Value::as_str);
        let object_like = schema.get("properties").is_some() || schema.get("allOf").is_some();
        let ty = declared_type.or(object_like.then_some("object"));
        if matches!(format, Some("int64" | "uint64" | "int32" | "uint32")) {
            let is_integer = value.as_i64().is_some() || value.as_u64().is_some();
            if !is_integer {
                self.violation(at, format!("{} must be a JSON integer on the wire, got {value}", format.unwrap_or_default()));
            }
            return;
        }
        match ty {
            Some("string") => match value.as_str() {
                None => self.violation(at, format!("expected a string, got {value}")),
                Some(s) if format == Some("date-time") => {
                    if chrono::DateTime::parse_from_rfc3339(s).is_err() {
                        self.violation(at, format!("{s:?} is not an RFC 3339 timestamp"));
                    }
                }
                Some(_) => {}
            },
            Some("boolean") if !value.is_boolean() => self.violation(at, format!("expected a boolean, got {value}")),
            Some("integer") if value.as_i64().is_none() && value.as_u64().is_none() => {
                self.violation(at, format!("expected an integer, got {value}"));
            }
            Some("number") if !value.is_number() => self.violation(at, format!("expected a number, got {value}")),
            Some("array") => match value.as_array() {
                None => self.violation(at, format!("expected an array, got {value}")),
                Some(items) => {
                    let item_schema = schema.get("items").unwrap_or(&Value::Null);
                    for (i, item) in items.iter().enumerate() {
                        self.check(item_schema, item, &format!("{at}[{i}]"), depth + 1);
                    }
                }
            },
            Some("object") => self.check_object(def_name, schema, value, at, depth),
            _ => {}
        }
    }

    fn check_object(&mut self, def_name: Option<&str>, schema: &Value, value: &Value, at: &str, depth: usize) {
        let Some(object) = value.as_object() else {
            self.violation(at, format!("expected an object, got {value}"));
            return;
        };
        let mut properties: BTreeMap<String, Value> = BTreeMap::new();
        self.collect_properties(def_name, schema, &mut properties, depth);
        let additional = schema.get("additionalProperties");
        for (key, item) in object {
            let path = format!("{at}.{key}");
            if let Some(property) = properties.get(key) {
                self.check(property, item, &path, depth + 1);
                continue;
            }
            match additional {
                Some(Value::Bool(true)) => {}
                Some(extra) if extra.is_object() => self.check(extra, item, &path, depth + 1),
                _ => {
                    let owner = def_name.unwrap_or("an inline schema");
                    let what = match self.direction {
                        Direction::Request => "Argo CD would silently drop it",
                        Direction::Response => "Argo CD does not send it",
                    };
                    self.violation(&path, format!("not declared in {owner}; {what}"));
                }
            }
        }
    }

    /// The properties an object may have: its own, its `allOf` parts', and the wire exceptions.
    fn collect_properties(&self, def_name: Option<&str>, schema: &Value, into: &mut BTreeMap<String, Value>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let flattened = def_name.and_then(|d| FLATTENED_DEFINITIONS.iter().find(|(from, _)| *from == d));
        if let Some((_, actual)) = flattened {
            if let Some(def) = self.spec.definition(actual) {
                self.collect_properties(Some(actual), def, into, depth + 1);
            }
            return;
        }
        if let Some(Value::Object(own)) = schema.get("properties") {
            for (k, v) in own {
                into.insert(k.clone(), v.clone());
            }
        }
        for part in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            let (name, resolved) = self.spec.resolve(part);
            self.collect_properties(name, resolved, into, depth + 1);
        }
        let inline = def_name.and_then(|d| INLINE_DEFINITIONS.iter().find(|(from, _)| *from == d));
        if let Some((_, inlined)) = inline
            && let Some(def) = self.spec.definition(inlined)
        {
            self.collect_properties(Some(inlined), def, into, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> SwaggerSpec {
        SwaggerSpec::from_value(json!({
            "swagger": "2.0",
            "paths": {
                "/api/v1/things/{name}": {
                    "get": {"operationId": "Get", "parameters": [
                        {"name": "name", "in": "path"},
                        {"name": "refresh", "in": "query", "type": "string"},
                        {"name": "flag", "in": "query", "type": "boolean"}],
                        "responses": {"200": {"schema": {"$ref": "#/definitions/Thing"}},
                                      "default": {"schema": {"$ref": "#/definitions/runtimeError"}}}},
                    "post": {"operationId": "Post", "parameters": [
                        {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Thing"}}],
                        "responses": {"200": {"schema": {"$ref": "#/definitions/Thing"}}}}
                },
                "/api/v1/things/special": {"get": {"operationId": "Special", "responses": {}}}
            },
            "definitions": {
                "Thing": {"type": "object", "properties": {
                    "n": {"type": "string", "format": "int64"},
                    "when": {"$ref": "#/definitions/v1Time"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "hook": {"$ref": "#/definitions/v1alpha1SyncStrategyHook"},
                    "list": {"type": "array", "items": {"type": "boolean"}}}},
                "v1Time": {"type": "string", "format": "date-time"},
                "v1alpha1SyncStrategyHook": {"type": "object", "properties": {
                    "syncStrategyApply": {"$ref": "#/definitions/v1alpha1SyncStrategyApply"}}},
                "v1alpha1SyncStrategyApply": {"type": "object", "properties": {"force": {"type": "boolean"}}},
                "runtimeError": {"type": "object", "properties": {
                    "code": {"type": "integer", "format": "int32"}, "error": {"type": "string"},
                    "message": {"type": "string"}}}
            }
        }))
        .expect("spec")
    }

    fn request(method: &str, path: &str, body: Option<Value>) -> LoggedRequest {
        LoggedRequest {
            method: method.into(),
            path: path.into(),
            query: Vec::new(),
            content_type: (method != "GET").then(|| "application/json".to_string()),
            authorization: None,
            raw_body: body.as_ref().map(Value::to_string).unwrap_or_default(),
            body,
            status: 200,
            response: json!({}),
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_most_specific_template_wins() {
        let spec = spec();
        assert_eq!(spec.find("GET", "/api/v1/things/special").map(|o| o.id.as_str()), Ok("Special"));
        assert_eq!(spec.find("GET", "/api/v1/things/x").map(|o| o.id.as_str()), Ok("Get"));
        assert!(spec.find("DELETE", "/api/v1/things/x").is_err());
    }

    #[test]
    fn wire_forms_pass_and_swagger_forms_that_go_refuses_fail() {
        let spec = spec();
        let good = request(
            "POST",
            "/api/v1/things/x",
            Some(json!({
                "n": 5, "when": "2026-11-01T00:00:00Z", "labels": {"a": "b"}, "hook": {"force": true}, "list": [true]
            })),
        );
        assert_eq!(spec.check_request(&good), Vec::<String>::new());
        let bad = request(
            "POST",
            "/api/v1/things/x",
            Some(json!({
                "n": "5", "when": "yesterday", "labels": {"a": 1}, "hook": {"syncStrategyApply": {"force": true}},
                "list": ["x"], "extra": 1
            })),
        );
        let violations = spec.check_request(&bad);
        assert_eq!(violations.len(), 6, "{violations:#?}");
    }

    #[test]
    fn query_parameters_are_checked_by_name_type_and_repetition() {
        let spec = spec();
        let mut r = request("GET", "/api/v1/things/x", None);
        r.query = vec![
            ("refresh".into(), "hard".into()),
            ("flag".into(), "yes".into()),
            ("refresh".into(), "normal".into()),
            ("nope".into(), "1".into()),
        ];
        let violations = spec.check_request(&r);
        assert_eq!(violations.len(), 3, "{violations:#?}");
    }

    #[test]
    fn error_bodies_must_be_runtime_errors_with_the_gateway_status() {
        let spec = spec();
        let mut r = request("GET", "/api/v1/things/x", None);
        r.status = 403;
        r.response = json!({"error": "permission denied", "code": 7, "message": "permission denied"});
        assert_eq!(spec.check_response(&r), Vec::<String>::new());
        r.status = 412;
        r.response = json!({"error": "a", "code": 9, "message": "b"});
        assert_eq!(spec.check_response(&r).len(), 2);
    }
}
