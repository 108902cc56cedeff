//! Go's text/template, as argocd-notifications executes templates: `gtmpl` (a Rust implementation
//! of text/template) with the Sprig functions the templates call, after Sprig's Go source.

use std::collections::BTreeMap;

use gtmpl::{Context, Func, FuncError, Template, Value};
use serde_json::Value as Json;

/// Executes Go text/template source with the Sprig functions below.
pub fn render_go_template(text: &str, vars: &Json) -> Result<String, String> {
    let mut template = Template::default();
    template.add_funcs(SPRIG);
    template.parse(text).map_err(|e| format!("parse error: {e}"))?;
    template.render(&Context::from(to_gtmpl(vars))).map_err(|e| format!("execution error: {e}"))
}

/// JSON as the Go side holds it: objects are maps (a missing key reads as no value), null is nil.
pub fn to_gtmpl(value: &Json) -> Value {
    match value {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().expect("a JSON number")),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_gtmpl).collect()),
        Json::Object(map) => Value::Map(map.iter().map(|(k, v)| (k.clone(), to_gtmpl(v))).collect()),
    }
}

// ---------------------------------------------------------------------------------------------
// Sprig (Masterminds/sprig v3), the functions the templates use, with Sprig's semantics. A
// template calling any other function fails to parse, so this list is also the complete list of
// what the templates need.
// ---------------------------------------------------------------------------------------------

const SPRIG: &[(&str, Func)] =
    &[("dict", sprig_dict), ("dig", sprig_dig), ("list", sprig_list), ("toJson", sprig_to_json), ("trunc", sprig_trunc)];

fn func_error(msg: impl Into<String>) -> FuncError {
    FuncError::Generic(msg.into())
}

fn map_of<'v>(value: &'v Value, func: &str) -> Result<&'v std::collections::HashMap<String, Value>, FuncError> {
    match value {
        Value::Map(m) | Value::Object(m) => Ok(m),
        // Go: `ps[len(ps)-1].(map[string]any)` panics, which text/template reports as an error.
        other => Err(func_error(format!("{func}: interface conversion: {other:?} is not map[string]interface {{}}"))),
    }
}

/// `dig "k1" "k2" ... default dict`: the value at that path, `default` where a key is missing,
/// the value itself (even nil) where present; stepping through a non-map is an error.
fn sprig_dig(args: &[Value]) -> Result<Value, FuncError> {
    if args.len() < 3 {
        return Err(FuncError::AtLeastXArgs("dig".into(), 3));
    }
    let (dict, rest) = args.split_last().expect("three arguments");
    let (default, keys) = rest.split_last().expect("two arguments");
    let mut map = map_of(dict, "dig")?;
    for (i, key) in keys.iter().enumerate() {
        let Value::String(key) = key else { return Err(func_error(format!("dig: key {key:?} is not a string"))) };
        match map.get(key) {
            None => return Ok(default.clone()),
            Some(step) if i + 1 == keys.len() => return Ok(step.clone()),
            Some(step) => map = map_of(step, "dig")?,
        }
    }
    unreachable!("dig has at least one key")
}

/// Go's `fmt.Sprintf("%v", v)` for the scalars a dict key can be.
fn strval(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::NoValue | Value::Nil => "<nil>".into(),
        other => other.to_string(),
    }
}

/// `dict k1 v1 k2 v2 ...`: a map; a key without a value maps to "".
fn sprig_dict(args: &[Value]) -> Result<Value, FuncError> {
    let map = args.chunks(2).map(|pair| (strval(&pair[0]), pair.get(1).cloned().unwrap_or_else(|| Value::from("")))).collect();
    Ok(Value::Map(map))
}

/// `list a b ...`: a list of the arguments (`list` alone: an empty one, what `range` over a
/// missing field needs in place of no value).
fn sprig_list(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::Array(args.to_vec()))
}

/// `trunc n s`: the first n BYTES of s (Go strings are bytes), or its last -n bytes for n < 0.
/// Go keeps a cut UTF-8 sequence as invalid bytes, which `toJson` then writes as U+FFFD; a Rust
/// string cannot hold them, so the replacement happens here instead.
fn sprig_trunc(args: &[Value]) -> Result<Value, FuncError> {
    let [count, s] = args else { return Err(FuncError::ExactlyXArgs("trunc".into(), 2)) };
    let Value::Number(count) = count else { return Err(func_error(format!("trunc: wrong type for value; expected int; got {count:?}"))) };
    let count = count.as_i64().ok_or_else(|| func_error("trunc: expected an int"))?;
    // Go converts the argument to `string`: a missing value or nil is an error, not "".
    let Value::String(s) = s else { return Err(func_error(format!("trunc: invalid value; expected string; got {s:?}"))) };
    let bytes = s.as_bytes();
    let len = i64::try_from(bytes.len()).expect("string length fits in i64");
    let kept = if count < 0 && len + count > 0 {
        &bytes[usize::try_from(len + count).expect("non-negative")..]
    } else if count >= 0 && len > count {
        &bytes[..usize::try_from(count).expect("non-negative")]
    } else {
        bytes
    };
    Ok(Value::String(String::from_utf8_lossy(kept).into_owned()))
}

/// Go's `encoding/json` view of a value; `None` where `json.Marshal` fails.
fn go_json(value: &Value) -> Option<Json> {
    Some(match value {
        Value::NoValue | Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Json::from(i),
            (None, Some(u)) => Json::from(u),
            // NaN and infinities: json.Marshal returns UnsupportedValueError.
            _ => Json::Number(serde_json::Number::from_f64(n.as_f64()?)?),
        },
        Value::Array(items) => Json::Array(items.iter().map(go_json).collect::<Option<_>>()?),
        Value::Map(map) | Value::Object(map) => {
            // json.Marshal writes map keys sorted.
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            Json::Object(sorted.into_iter().map(|(k, v)| Some((k.clone(), go_json(v)?))).collect::<Option<_>>()?)
        }
        Value::Function(_) => return None,
    })
}

/// `toJson v`: `json.Marshal(v)`, with its error swallowed into "" as Sprig does. json.Marshal
/// escapes `<`, `>`, `&`, U+2028 and U+2029 (they can only occur inside strings, where the escape
/// means the same character).
fn sprig_to_json(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = args else { return Err(FuncError::ExactlyXArgs("toJson".into(), 1)) };
    let Some(json) = go_json(value) else { return Ok(Value::from("")) };
    let text = serde_json::to_string(&json).expect("JSON values serialize");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(Value::String(out))
}
