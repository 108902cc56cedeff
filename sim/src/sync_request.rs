//! Decoding `ApplicationSyncRequest` bodies the way Argo CD's gateway does.
//!
//! grpc-gateway v1 decodes request bodies with Go's `encoding/json` into the generated Go struct
//! (docs/argo-cd-behaviour.md §1.1): unknown fields are ignored, field names match case-insensitively, `null`
//! leaves a field unset, an empty body is an empty request, and a value of the wrong JSON type is
//! a 400 (InvalidArgument) whose message is Go's decode error, e.g.
//! `json: cannot unmarshal string into Go struct field ApplicationSyncRequest.prune of type bool`.
//! serde cannot produce those messages, so the body is first checked against a small description
//! of the Go types, which also normalises it (canonical keys, unknown fields dropped); only then
//! is it deserialised into typed structs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ApiError, GrpcCode};

/// A Go type as far as `encoding/json` cares.
enum GoType {
    Str,
    Bool,
    Int64,
    Slice(&'static GoType),
    /// A pointer to a struct (what gogo-proto generates for message fields).
    Struct(&'static GoStruct),
}

struct GoStruct {
    /// Unqualified name: what Go prints before the field path.
    name: &'static str,
    /// Qualified name: what Go prints as the field's type.
    qualified: &'static str,
    fields: &'static [(&'static str, GoType)],
}

impl GoType {
    fn go_name(&self) -> String {
        match self {
            GoType::Str => "string".into(),
            GoType::Bool => "bool".into(),
            GoType::Int64 => "int64".into(),
            GoType::Slice(GoType::Struct(s)) => format!("[]*{}", s.qualified),
            GoType::Slice(inner) => format!("[]{}", inner.go_name()),
            GoType::Struct(s) => s.qualified.into(),
        }
    }
}

const INFO: GoStruct = GoStruct { name: "Info", qualified: "v1alpha1.Info", fields: &[("name", GoType::Str), ("value", GoType::Str)] };
const RESOURCE: GoStruct = GoStruct {
    name: "SyncOperationResource",
    qualified: "v1alpha1.SyncOperationResource",
    fields: &[("group", GoType::Str), ("kind", GoType::Str), ("name", GoType::Str), ("namespace", GoType::Str)],
};
const STRATEGY_APPLY: GoStruct =
    GoStruct { name: "SyncStrategyApply", qualified: "v1alpha1.SyncStrategyApply", fields: &[("force", GoType::Bool)] };
/// `SyncStrategyHook` embeds `SyncStrategyApply` with `json:",inline"`: `force` sits directly in
/// `hook` on the wire (swagger wrongly shows `hook.syncStrategyApply`, which Go ignores).
const STRATEGY_HOOK: GoStruct =
    GoStruct { name: "SyncStrategyHook", qualified: "v1alpha1.SyncStrategyHook", fields: &[("force", GoType::Bool)] };
const STRATEGY: GoStruct = GoStruct {
    name: "SyncStrategy",
    qualified: "v1alpha1.SyncStrategy",
    fields: &[("apply", GoType::Struct(&STRATEGY_APPLY)), ("hook", GoType::Struct(&STRATEGY_HOOK))],
};
const BACKOFF: GoStruct = GoStruct {
    name: "Backoff",
    qualified: "v1alpha1.Backoff",
    fields: &[("duration", GoType::Str), ("factor", GoType::Int64), ("maxDuration", GoType::Str)],
};
const RETRY: GoStruct = GoStruct {
    name: "RetryStrategy",
    qualified: "v1alpha1.RetryStrategy",
    fields: &[("limit", GoType::Int64), ("backoff", GoType::Struct(&BACKOFF)), ("refresh", GoType::Bool)],
};
const SYNC_OPTIONS: GoStruct =
    GoStruct { name: "SyncOptions", qualified: "application.SyncOptions", fields: &[("items", GoType::Slice(&GoType::Str))] };
const REQUEST: GoStruct = GoStruct {
    name: "ApplicationSyncRequest",
    qualified: "application.ApplicationSyncRequest",
    fields: &[
        ("name", GoType::Str),
        ("revision", GoType::Str),
        ("dryRun", GoType::Bool),
        ("prune", GoType::Bool),
        ("strategy", GoType::Struct(&STRATEGY)),
        ("resources", GoType::Slice(&GoType::Struct(&RESOURCE))),
        ("manifests", GoType::Slice(&GoType::Str)),
        ("infos", GoType::Slice(&GoType::Struct(&INFO))),
        ("retryStrategy", GoType::Struct(&RETRY)),
        ("syncOptions", GoType::Struct(&SYNC_OPTIONS)),
        ("appNamespace", GoType::Str),
        ("project", GoType::Str),
        ("sourcePositions", GoType::Slice(&GoType::Int64)),
        ("revisions", GoType::Slice(&GoType::Str)),
    ],
};

/// A decoded sync request. Serialises the way Go re-encodes the parts that end up in the
/// operation (`omitempty` everywhere it is declared).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SyncRequest {
    pub(crate) revision: String,
    pub(crate) dry_run: bool,
    pub(crate) prune: bool,
    pub(crate) strategy: Option<SyncStrategy>,
    pub(crate) resources: Vec<SyncResource>,
    pub(crate) manifests: Option<Vec<String>>,
    pub(crate) infos: Vec<Info>,
    pub(crate) retry_strategy: Option<RetryStrategy>,
    pub(crate) sync_options: Option<SyncOptions>,
    pub(crate) app_namespace: String,
    pub(crate) project: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SyncStrategy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) apply: Option<StrategyForce>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hook: Option<StrategyForce>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct StrategyForce {
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) force: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SyncResource {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) namespace: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Info {
    pub(crate) name: String,
    pub(crate) value: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RetryStrategy {
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) limit: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) backoff: Option<Backoff>,
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) refresh: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Backoff {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) factor: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_duration: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SyncOptions {
    pub(crate) items: Vec<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Decodes a raw body as Argo CD would, or the 400 it would answer.
pub(crate) fn decode(raw: &[u8]) -> Result<SyncRequest, ApiError> {
    let invalid = |message: String| ApiError::new(GrpcCode::InvalidArgument, message);
    if raw.iter().all(u8::is_ascii_whitespace) {
        // io.EOF from the decoder is ignored by the gateway: an empty body is an empty request.
        return Ok(SyncRequest::default());
    }
    let value: Value = serde_json::from_slice(raw).map_err(|e| invalid(syntax_message(raw, &e)))?;
    if value.is_null() {
        return Ok(SyncRequest::default());
    }
    let Value::Object(map) = &value else {
        return Err(invalid(format!("json: cannot unmarshal {} into Go value of type {}", kind(&value), REQUEST.qualified)));
    };
    let mut path = Vec::new();
    let normalised = check_struct(map, &REQUEST, &mut path).map_err(invalid)?;
    serde_json::from_value(normalised).map_err(|e| invalid(e.to_string()))
}

/// Go's JSON kind names, as in `UnmarshalTypeError.Value`.
fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn mismatch(value: &Value, owner: &GoStruct, path: &[&str], ty: &GoType) -> String {
    let shown = match value {
        // Go says just "number" unless the number is the problem itself (a fraction into an int).
        Value::Number(_) if !matches!(ty, GoType::Int64) => "number".to_string(),
        other => kind(other),
    };
    format!("json: cannot unmarshal {shown} into Go struct field {}.{} of type {}", owner.name, path.join("."), ty.go_name())
}

fn check_struct(input: &Map<String, Value>, def: &'static GoStruct, path: &mut Vec<&'static str>) -> Result<Value, String> {
    let mut out = Map::new();
    for (key, field_value) in input {
        // Exact match first, then case-insensitive, as encoding/json does.
        let found =
            def.fields.iter().find(|(name, _)| name == key).or_else(|| def.fields.iter().find(|(name, _)| name.eq_ignore_ascii_case(key)));
        let Some((name, ty)) = found else { continue };
        if field_value.is_null() {
            continue;
        }
        path.push(name);
        let checked = check_value(field_value, def, ty, path);
        path.pop();
        out.insert((*name).to_string(), checked?);
    }
    Ok(Value::Object(out))
}

fn check_value(value: &Value, owner: &'static GoStruct, ty: &'static GoType, path: &mut Vec<&'static str>) -> Result<Value, String> {
    match (ty, value) {
        (GoType::Str, Value::String(_)) | (GoType::Bool, Value::Bool(_)) => Ok(value.clone()),
        (GoType::Int64, Value::Number(n)) if n.is_i64() => Ok(value.clone()),
        (GoType::Slice(inner), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if item.is_null() {
                    out.push(Value::Null);
                    continue;
                }
                out.push(check_value(item, owner, inner, path)?);
            }
            Ok(Value::Array(out))
        }
        (GoType::Struct(def), Value::Object(map)) => check_struct(map, def, path),
        _ => Err(mismatch(value, owner, path, ty)),
    }
}

/// An approximation of Go's syntax error texts for a body serde_json could not parse.
fn syntax_message(raw: &[u8], error: &serde_json::Error) -> String {
    if error.is_eof() {
        return "unexpected EOF".into();
    }
    let offset = offset_of(raw, error.line(), error.column());
    match raw.get(offset.saturating_sub(1)).map(|b| char::from(*b)) {
        Some(c) => format!("invalid character '{c}' looking for beginning of value"),
        None => "unexpected EOF".into(),
    }
}

fn offset_of(raw: &[u8], line: usize, column: usize) -> usize {
    let mut current_line = 1;
    let mut offset = 0;
    for (i, b) in raw.iter().enumerate() {
        if current_line == line {
            offset = i;
            break;
        }
        if *b == b'\n' {
            current_line += 1;
        }
    }
    offset + column
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_request_decodes_and_unknown_fields_are_ignored() {
        let body = br#"{"revision":"main","prune":true,"strategy":{"hook":{"force":true}},
            "syncOptions":{"items":["ApplyOutOfSyncOnly=true"]},
            "retryStrategy":{"limit":2,"backoff":{"duration":"10s","factor":2,"maxDuration":"2m"}},
            "infos":[{"name":"k","value":"v"}],"project":"p","Bogus":1,"DRYRUN":true}"#;
        let req = decode(body).expect("valid");
        assert_eq!(req.revision, "main");
        assert!(req.prune && req.dry_run);
        assert!(req.strategy.and_then(|s| s.hook).is_some_and(|h| h.force));
        assert_eq!(req.infos.len(), 1);
        assert_eq!(req.retry_strategy.map(|r| r.limit), Some(2));
        assert_eq!(req.project, "p");
    }

    #[test]
    fn type_mismatches_give_go_decode_messages() {
        let cases: [(&[u8], &str); 5] = [
            (br#"{"prune":"yes"}"#, "json: cannot unmarshal string into Go struct field ApplicationSyncRequest.prune of type bool"),
            (
                br#"{"retryStrategy":{"limit":"2"}}"#,
                "json: cannot unmarshal string into Go struct field RetryStrategy.retryStrategy.limit of type int64",
            ),
            (br#"{"infos":[{"name":1}]}"#, "json: cannot unmarshal number into Go struct field Info.infos.name of type string"),
            (
                br#"{"syncOptions":["a"]}"#,
                "json: cannot unmarshal array into Go struct field ApplicationSyncRequest.syncOptions of type application.SyncOptions",
            ),
            (
                br#"{"sourcePositions":[1.5]}"#,
                "json: cannot unmarshal number 1.5 into Go struct field ApplicationSyncRequest.sourcePositions of type int64",
            ),
        ];
        for (body, message) in cases {
            let err = decode(body).expect_err("mismatch");
            assert_eq!(err.message, message);
            assert_eq!(err.http_status(), 400);
        }
    }

    #[test]
    fn empty_null_and_malformed_bodies() {
        assert!(decode(b"").is_ok());
        assert!(decode(b"null").is_ok());
        assert_eq!(
            decode(b"[]").expect_err("array").message,
            "json: cannot unmarshal array into Go value of type application.ApplicationSyncRequest"
        );
        assert_eq!(decode(b"{\"prune\":").expect_err("eof").message, "unexpected EOF");
        assert!(decode(b"{x}").expect_err("syntax").message.starts_with("invalid character"));
    }
}
